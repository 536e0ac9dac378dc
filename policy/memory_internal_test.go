package policy

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/topdown"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeHeap is a process heap the test sets: objects now, live as of the
// last collection, and live after a collection.
type fakeHeap struct {
	mu                     sync.Mutex
	objects, live, afterGC uint64
	collections            int
}

func (h *fakeHeap) read() (uint64, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.objects, h.live
}

func (h *fakeHeap) gc() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.collections++
	h.live, h.objects = h.afterGC, h.afterGC
}

// TestEvalBudgetCountsOnlyGrowthDuringTheEvaluation attacks the evaluation
// budget with growth elsewhere: the last collection marked 100 MiB live,
// then a relist took the heap to 300 MiB (150 MiB of it retained) before a
// slow evaluation was watched. The evaluation itself allocates nothing
// retained: it must not be denied.
func TestEvalBudgetCountsOnlyGrowthDuringTheEvaluation(t *testing.T) {
	const mib = 1 << 20
	h := &fakeHeap{objects: 300 * mib, live: 100 * mib, afterGC: 250 * mib}
	e := &Engine{memBudget: 64 * mib, gc: &gcGate{now: time.Now, gc: h.gc}}
	st := &evalState{e: e, cancel: topdown.NewCancel()}
	polls := 0
	w := &heapPoll{budget: e.memBudget, read: func() (uint64, uint64) {
		polls++
		if polls == 2 {
			h.mu.Lock()
			h.objects = 400 * mib // the evaluation's garbage: the watch collects
			h.mu.Unlock()
		}
		if polls > 20 {
			st.done.Store(true)
		}
		return h.read()
	}, collect: e.gc.collect}
	watchEval(st, w, time.Time{})
	if st.overBudget.Load() {
		t.Fatalf("a genuine evaluation was denied: the live heap grew %d MiB from the watch's baseline, the budget is 64 MiB", st.peak/mib)
	}
	if h.collections != 1 {
		t.Errorf("%d collections, want 1", h.collections)
	}
}

// TestForcedCollectionsAreRateLimited attacks the collections slow
// evaluations force: concurrent watches, each seeing its budget of
// garbage, force at most one collection per gcInterval together.
func TestForcedCollectionsAreRateLimited(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var n atomic.Int32
	g := &gcGate{now: clock.Now, gc: func() { n.Add(1) }}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 10 {
				g.collect()
			}
		})
	}
	wg.Wait()
	if got := n.Load(); got != 1 {
		t.Fatalf("16 watches forced %d collections at one instant, want 1", got)
	}
	clock.Step(gcInterval - time.Millisecond)
	if g.collect() {
		t.Error("a collection was forced before gcInterval passed")
	}
	clock.Step(time.Millisecond)
	if !g.collect() || n.Load() != 2 {
		t.Errorf("no collection after gcInterval (%d in all)", n.Load())
	}
}
