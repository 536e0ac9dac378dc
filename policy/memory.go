package policy

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/topdown"
)

// Errors of the memory budget.
var (
	// ErrMemoryBudget is the cause of a policy test run stopped because the
	// process's live heap grew past the engine's MemoryBudget while it ran.
	ErrMemoryBudget = errors.New("policy tests exceeded the memory budget")
	// ErrEvalMemoryBudget: an evaluation was stopped because the live heap
	// grew past the engine's MemoryBudget while it ran.
	ErrEvalMemoryBudget = errors.New("policy evaluation exceeded the memory budget")
)

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
	w := newHeapPoll(budget, forceGC)
	_, w.base = w.read()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		finished := func() bool {
			select {
			case <-done:
				return true
			case <-ctx.Done():
				return true
			default:
				return false
			}
		}
		if w.poll(finished, interval) {
			cancel(ErrMemoryBudget)
		}
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

// heapPoll is the state of one watch, owned by its poll goroutine until
// that returns.
type heapPoll struct {
	budget, base uint64
	peak         uint64 // the largest live heap growth seen
	// read returns the heap's objects now and the live heap the last
	// collection marked; collect forces a collection, or says it did not.
	read    func() (objects, live uint64)
	collect func() bool
}

// newHeapPoll reads the process's heap, collecting with collect.
func newHeapPoll(budget uint64, collect func() bool) *heapPoll {
	samples := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}}
	return &heapPoll{budget: budget, collect: collect, read: func() (uint64, uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}}
}

func forceGC() bool {
	runtime.GC()
	return true
}

// poll reads the heap every interval until finished says so (false) or
// the live heap grew past the budget (true). When the heap's objects
// exceed the live heap by the budget it forces a collection (when collect
// allows one; otherwise it takes the live heap of the last collection,
// another watch's or the runtime's) and compares the live heap with base.
func (w *heapPoll) poll(finished func() bool, interval time.Duration) bool {
	t := time.NewTicker(interval)
	defer t.Stop()
	live := w.base
	for range t.C {
		if finished() {
			return false
		}
		if objects, _ := w.read(); objects <= live+w.budget {
			continue
		}
		w.collect()
		_, live = w.read()
		if live > w.base {
			w.peak = max(w.peak, live-w.base)
		}
		if live > w.base+w.budget {
			return true
		}
	}
	return false
}

// gcInterval is the least time between two collections forced by watched
// evaluations, all of them together (gcGate).
const gcInterval = 100 * time.Millisecond

// gcGate rate-limits the collections watched evaluations force: concurrent
// slow evaluations share one collection per gcInterval, rather than each
// forcing its own after every budget of allocation.
type gcGate struct {
	now  func() time.Time
	last atomic.Int64 // UnixNano of the last forced collection
	gc   func()
}

// allow says whether a collection may be forced now, and claims it.
func (g *gcGate) allow() bool {
	now := g.now().UnixNano()
	last := g.last.Load()
	if last != 0 && now-last < int64(gcInterval) {
		return false
	}
	return g.last.CompareAndSwap(last, now)
}

// collect forces a collection when allowed (at most one per gcInterval).
func (g *gcGate) collect() bool {
	if !g.allow() {
		return false
	}
	g.gc()
	return true
}

// slowEval is how long an evaluation runs before watchEval watches the
// heap for it: an admission's evaluation takes tens of microseconds.
const slowEval = 20 * time.Millisecond

// evalState is one evaluation's bounds, shared with its timer.
type evalState struct {
	e                          *Engine
	cancel                     topdown.Cancel
	done, timedOut, overBudget atomic.Bool
	peak                       uint64 // set before overBudget
}

// bound starts the one timer of an evaluation (nil when unbounded): it
// cancels the evaluation once it ran past the engine's EvalTimeout
// (setting timedOut) or, watched from slowEval on, made the live heap grow
// past the MemoryBudget (watchEval, setting overBudget). One timer rather
// than one for each bound, and a method value rather than closures: an
// admission's evaluation allocates little else.
func (st *evalState) bound() *time.Timer {
	switch e := st.e; {
	case e.memBudget == 0 && e.evalTimeout <= 0:
		return nil
	case e.memBudget == 0 || (e.evalTimeout > 0 && e.evalTimeout <= slowEval):
		return time.AfterFunc(e.evalTimeout, st.timeout)
	}
	return time.AfterFunc(slowEval, st.watch)
}

func (st *evalState) timeout() {
	st.timedOut.Store(true)
	st.cancel.Cancel()
}

// watch runs watchEval until the evaluation ends, runs past the engine's
// EvalTimeout or over its MemoryBudget.
func (st *evalState) watch() {
	var deadline time.Time
	if st.e.evalTimeout > 0 {
		deadline = time.Now().Add(st.e.evalTimeout - slowEval)
	}
	watchEval(st, newHeapPoll(st.e.memBudget, st.e.gc.collect), deadline)
}

// watchEval bounds the heap growth of an evaluation still running after
// slowEval, as watchMemory does for tests, from a baseline of its own: the
// heap's objects when the watch starts (live and not yet collected: no
// collection of its own, which would cost every slow evaluation one, and
// never less than what the heap held then, so growth elsewhere before the
// watch never counts against the evaluation). It sets st.overBudget and
// cancels the evaluation when the live heap grew past baseline + budget
// before the evaluation ended, and times it out at deadline (unless zero).
// Collections are forced through the engine's gcGate (one per gcInterval
// for every watch together). The heap is the process's, so what other
// parts retain while the evaluation runs counts too; only evaluations that
// run this long are watched, which an admission's never do.
func watchEval(st *evalState, w *heapPoll, deadline time.Time) {
	objects, live := w.read()
	w.base = max(objects, live)
	timedOut := false
	finished := func() bool {
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			timedOut = true
			return true
		}
		return st.done.Load()
	}
	switch {
	case w.poll(finished, memoryPoll):
		st.peak = w.peak
		st.overBudget.Store(true)
		st.cancel.Cancel()
	case timedOut && !st.done.Load():
		st.timeout()
	}
}
