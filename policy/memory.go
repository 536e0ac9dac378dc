package policy

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"time"
)

// ErrMemoryBudget is the cause of a policy test run stopped because the
// process's live heap grew past the engine's MemoryBudget while it ran.
var ErrMemoryBudget = errors.New("policy tests exceeded the memory budget")

// DefaultMemoryBudget bounds how much the live heap may grow while a policy
// set's tests run (Options.MemoryBudget).
const DefaultMemoryBudget = 64 << 20

// memoryPoll is how often watchMemory reads the heap.
const memoryPoll = 2 * time.Millisecond

const (
	heapObjects = "/memory/classes/heap/objects:bytes" // live and not yet swept objects, now
	heapLive    = "/gc/heap/live:bytes"                // live objects, as marked by the last GC
)

// watchMemory runs f bounding the heap growth it may cause. OPA has no
// allocation budget (its evaluation has cancellation and a time limit
// only), and Go does not count allocations per goroutine, so the watch
// reads the process's heap: it collects garbage once at the start to know
// the live heap, polls the heap's objects every interval and, when they
// exceed the last live figure by the budget, collects garbage again; when
// the live heap then exceeds the start's by more than the budget, it
// cancels f's context with the cause ErrMemoryBudget. The tests'
// evaluation stops at its next step (topdown checks cancellation on each
// expression and inside numbers.range), so the heap ends near start +
// budget. A forced collection happens at most once per budget of
// allocation, only while tests run (loads are rare: start-up and policy
// edits). A budget of 0 runs f unbounded.
//
// watchMemory returns f's error, or one wrapping ErrMemoryBudget that
// names the growth when the budget stopped f.
func watchMemory(ctx context.Context, budget uint64, interval time.Duration, f func(context.Context) error) error {
	if budget == 0 {
		return f(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runtime.GC()
	samples := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}}
	metrics.Read(samples)
	w := &heapPoll{budget: budget, base: samples[1].Value.Uint64(), samples: samples}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.poll(ctx, done, interval, cancel)
	}()
	err := f(ctx)
	close(done)
	<-stopped
	if errors.Is(context.Cause(ctx), ErrMemoryBudget) {
		return fmt.Errorf("%w: the live heap grew by %.1f MiB, over the budget of %.1f MiB (docs/policies.md, memory)",
			ErrMemoryBudget, float64(w.peak)/(1<<20), float64(budget)/(1<<20))
	}
	return err
}

// heapPoll is the state of one watchMemory, owned by its poll goroutine
// until that returns.
type heapPoll struct {
	budget, base uint64
	peak         uint64 // the largest live heap growth seen
	samples      []metrics.Sample
}

// poll watches the heap until done or the budget is exceeded.
func (w *heapPoll) poll(ctx context.Context, done <-chan struct{}, interval time.Duration, cancel context.CancelCauseFunc) {
	t := time.NewTicker(interval)
	defer t.Stop()
	live := w.base
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(w.samples)
		if w.samples[0].Value.Uint64() <= live+w.budget {
			continue
		}
		runtime.GC()
		metrics.Read(w.samples)
		live = w.samples[1].Value.Uint64()
		if live > w.base {
			w.peak = max(w.peak, live-w.base)
		}
		if live > w.base+w.budget {
			cancel(ErrMemoryBudget)
			return
		}
	}
}
