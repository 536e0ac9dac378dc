package dra

import (
	"context"
	"sync"
)

// budget is one review's CEL cost budget, shared by every claim it
// evaluates (a pod's templates): a pod of many templates gets no more CEL
// than one claim.
type budget struct {
	mu   sync.Mutex
	left uint64
}

type budgetKey struct{}

// ShareBudget returns ctx carrying one claim's CEL cost budget (the
// charger's), which every Demands under it shares: each spends what is
// left after the ones before it, and once it is spent the devices not
// evaluated count as eligible (the worst case), as for one claim. A
// review that evaluates several claims (a pod's templates) calls it once.
// ctx is returned as is when it carries a budget already (or c is nil).
func (c *Charger) ShareBudget(ctx context.Context) context.Context {
	if c == nil || ctx == nil || budgetOf(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, &budget{left: c.budget})
}

// budgetOf is ctx's shared budget (nil when none).
func budgetOf(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// take hands out everything left (a concurrent Demands under the same
// budget gets nothing: its devices count as eligible, the worst case).
func (b *budget) take() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := b.left
	b.left = 0
	return left
}

// give returns what a Demands did not spend.
func (b *budget) give(left uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left += left
}
