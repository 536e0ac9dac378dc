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
	samples := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}}
	metrics.Read(samples)
	w := &heapPoll{budget: budget, base: samples[1].Value.Uint64(), samples: samples}
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

// heapPoll is the state of one watchMemory, owned by its poll goroutine
// until that returns.
type heapPoll struct {
	budget, base uint64
	peak         uint64 // the largest live heap growth seen
	samples      []metrics.Sample
}

// poll reads the heap every interval until finished says so (false) or
// the live heap grew past the budget (true).
func (w *heapPoll) poll(finished func() bool, interval time.Duration) bool {
	t := time.NewTicker(interval)
	defer t.Stop()
	live := w.base
	for range t.C {
		if finished() {
			return false
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
			return true
		}
	}
	return false
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
	watchEval(st, st.e.memBudget, deadline)
}

// watchEval bounds the heap growth of an evaluation still running after
// slowEval, as watchMemory does for tests, taking the live heap of the last
// collection as its start (an evaluation is not worth a collection of its
// own): it sets st.overBudget and cancels the evaluation when the live
// heap grew past the budget before the evaluation ended, and times it out
// at deadline (unless zero). The heap is the process's, so what other
// parts retain meanwhile counts too; only evaluations that run this long
// are watched, which an admission's never do.
func watchEval(st *evalState, budget uint64, deadline time.Time) {
	samples := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}}
	metrics.Read(samples)
	w := &heapPoll{budget: budget, base: samples[1].Value.Uint64(), samples: samples}
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
