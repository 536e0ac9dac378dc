package admitqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// Admissions in one namespace are decided in order, one at a time, and
// committed in batches: while one write of the namespace's object is in
// flight the next reviews queue; then they are decided one after the other
// (each counting the reservations of those before it) and written together
// in one status update. A review waits for at most one write before its own
// batch's, instead of one per review queued before it (as the in-tree
// ResourceQuota admission batches its quota updates). The cleaner's tidy
// jobs queue the same way, so that a namespace's object has one writer per
// replica.
//
//	Admit ──queue──▶ WAITING ──the namespace's worker takes the batch──▶ DECIDED (in order)
//	                    │                                                   │ one status write (commit.go)
//	                    │ the review's context ends: error                  ▼
//	                    ▼                                     written: every decided review gets
//	                 (answered)                               its result; conflict: read again,
//	                                                          decide the whole batch again

// review is one admission waiting to be decided.
type review struct {
	ctx  context.Context
	uid  types.UID
	req  decision.Request
	done chan answer // buffered: the worker never blocks on it
	// deadline is ctx's, on the store's clock (zero: none): how long the
	// review may wait is measured on the clock its blockers fall due by.
	deadline time.Time

	// Of the last round: the outcome, the decision's result, the error of
	// a failed review, and the unconfirmed reservations a waiting one
	// waits for.
	outcome  outcome
	result   decision.Result
	err      error
	blockers []gpuadmitv1.Reservation
}

type answer struct {
	result decision.Result
	err    error
}

type outcome int

const (
	undecided outcome = iota
	decided           // nothing to reserve: denied, a dry run, or allowed without demand
	reserving         // allowed; its reservation is in the round's write
	waiting           // denied for now; waits for unconfirmed reservations to end (settle.go)
	failed            // the decision failed, the review's context ended, or its reservation was refused
)

// tidyJob asks the namespace's worker to write what tidy finds even when
// no review reserves (the cleaner's round); removed is what the write
// removed.
type tidyJob struct {
	ctx  context.Context
	done chan tidyAnswer // buffered
}

type tidyAnswer struct {
	removed int
	err     error
}

// queue is one namespace's waiting work; running while a worker drains it.
type queue struct {
	reviews []*review
	tidies  []*tidyJob
	running bool
	// wake tells an idle worker that there is work again.
	wake chan struct{}
}

// queues are the namespaces' queues.
type queues struct {
	mu sync.Mutex
	m  map[string]*queue
}

func (qs *queues) init() { qs.m = map[string]*queue{} }

// Admit decides req (a pod's admission in namespace req.Namespace, uid
// naming its reservation) against the namespace's reservations as the API
// server holds them, with those of the reviews decided before it in this
// replica, and, when the decision allows a pod with demand (not a dry
// run), adds the pod's reservation to the namespace's GPUReservationSet with
// the object's resourceVersion. It returns the decision only once nothing
// had to be reserved or the reservation is written. A conflict (another
// replica wrote first) re-reads the object and decides again; a review
// whose context ends gets an error. A reservation is refused (an error)
// when the namespace holds MaxReservations already and none of them can
// end before the review's deadline, or when the pod's UID
// is reserved with another name or demand, or recorded: a review never
// replaces another's reservation.
func (s *Store) Admit(ctx context.Context, uid types.UID, req decision.Request) (decision.Result, error) {
	if ceilingBuild && s.opts.AnswerBeforeWrite && !req.DryRun {
		return s.answerEarly(ctx, uid, req)
	}
	r := &review{ctx: ctx, uid: uid, req: req, done: make(chan answer, 1)}
	if d, ok := ctx.Deadline(); ok {
		r.deadline = s.opts.Clock.Now().Add(time.Until(d))
	}
	s.submit(req.Namespace, func(q *queue) { q.reviews = append(q.reviews, r) })
	select {
	case a := <-r.done:
		return a.result, a.err
	case <-ctx.Done():
	}
	select { // the worker, bound by the same deadline, usually says more
	case a := <-r.done:
		return a.result, a.err
	case <-s.opts.Clock.After(answerGrace):
		return decision.Result{}, fmt.Errorf("waiting for the earlier decisions in namespace %s: %w", req.Namespace, context.Cause(ctx))
	}
}

// tidyNamespace has the namespace's worker write what tidy finds, and
// returns how many reservations the write removed.
func (s *Store) tidyNamespace(ctx context.Context, ns string) (int, error) {
	j := &tidyJob{ctx: ctx, done: make(chan tidyAnswer, 1)}
	s.submit(ns, func(q *queue) { q.tidies = append(q.tidies, j) })
	select {
	case a := <-j.done:
		return a.removed, a.err
	case <-ctx.Done():
		return 0, fmt.Errorf("tidying GPUReservationSet %s/%s: %w", ns, gpuadmitv1.ObjectName, ctx.Err())
	}
}

// answerGrace is how long a review whose context ended waits for the
// worker's own answer (which names what took the time).
const answerGrace = 50 * time.Millisecond

// submit adds work to the namespace's queue and starts or wakes its worker.
func (s *Store) submit(ns string, add func(*queue)) {
	s.queues.mu.Lock()
	q := s.queues.m[ns]
	if q == nil {
		q = &queue{wake: make(chan struct{}, 1)}
		s.queues.m[ns] = q
	}
	add(q)
	start := !q.running
	q.running = true
	s.queues.mu.Unlock()
	if start {
		go s.drain(ns, q)
		return
	}
	select { // the worker may be idle, waiting for work
	case q.wake <- struct{}{}:
	default:
	}
}

// drain commits the namespace's queue, batch by batch, until it has been
// empty for Options.WorkerIdle. A worker that lives through a burst keeps
// the stack the policy evaluation grew (a new goroutine grows its stack
// again, copying it each time; docs/performance.md has what that cost).
func (s *Store) drain(ns string, q *queue) {
	idle := s.opts.Clock.NewTimer(s.opts.WorkerIdle)
	defer idle.Stop()
	for {
		if b := s.queues.take(q); !b.empty() {
			s.commit(ns, q, b)
			continue
		}
		resetTimer(idle, s.opts.WorkerIdle)
		select {
		case <-q.wake:
			continue
		case <-idle.C():
		}
		if s.queues.retire(ns, q) {
			return
		}
	}
}

// resetTimer restarts t for d, dropping a firing the worker did not read
// (it woke for work instead). A real timer drops it itself; the tests'
// fake clock keeps it in the timer's channel, and its next firing would
// then block the clock's Step, and every other timer, for good.
func resetTimer(t clock.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C():
		default:
		}
	}
	t.Reset(d)
}

// take empties the queue into a batch.
func (qs *queues) take(q *queue) batch {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	b := batch{reviews: q.reviews, tidies: q.tidies}
	q.reviews, q.tidies = nil, nil
	return b
}

// retire ends the namespace's worker when its queue is still empty.
func (qs *queues) retire(ns string, q *queue) bool {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if len(q.reviews) > 0 || len(q.tidies) > 0 {
		return false
	}
	q.running = false
	delete(qs.m, ns)
	return true
}
