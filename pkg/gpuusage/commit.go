package gpuusage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Admissions in one namespace are decided in order, one at a time, and
// committed in groups: while one write of the namespace's object is in
// flight the next reviews queue; then they are decided one after the other
// (each counting the reservations of those before it) and written together
// in one status update. A review waits for at most one write before its own
// group's, instead of one per review queued before it (as the in-tree
// ResourceQuota admission batches its quota updates).
//
//	Admit ──queue──▶ WAITING ──the namespace's worker takes the group──▶ DECIDED (in order)
//	                    │                                                    │ one status write
//	                    │ the review's context ends: error                   ▼
//	                    ▼                                      written: reserving reviews nil,
//	                 (answered)                                the others their decision;
//	                                                           conflict: read again, decide the
//	                                                           whole group again

// admission is one review waiting to be decided.
type admission struct {
	ctx    context.Context
	uid    types.UID
	name   string
	decide func() (bool, effective.Vector, error) // nil: only tidy the object
	done   chan error                             // buffered: the worker never blocks on it

	// removed counts the reservations the group's write removed (tidy).
	removed int

	// outcome of the last round of decisions, and err for failed.
	outcome outcome
	err     error
}

type outcome int

const (
	undecided outcome = iota
	allowed           // decided, nothing to reserve (or a dry-run)
	reserved          // decided; its reservation is in the group's write
	failed            // decide failed, or the review's context ended
)

// queue is one namespace's waiting reviews; running while a worker drains it.
type queue struct {
	waiting []*admission
	running bool
	// wake tells an idle worker that waiting is not empty any more.
	wake chan struct{}
}

// Admit runs decide against the namespace's reservations as the API server
// holds them (with those of the reviews decided before it in this replica)
// and, when decide reserves, adds the pod's reservation to the namespace's
// GPUUsage object with the object's resourceVersion. It returns nil only
// when nothing had to be reserved or the reservation is written. A conflict
// (another replica wrote first) re-reads the object from the API server and
// decides again; a review whose context ends gets an error, never nil.
func (s *Store) Admit(ctx context.Context, ns string, uid types.UID, name string,
	decide func() (reserve bool, demand effective.Vector, err error)) error {
	return s.enqueue(ns, &admission{ctx: ctx, uid: uid, name: name, decide: decide, done: make(chan error, 1)})
}

// enqueue queues a (an admission, or with no decide a tidy-only job) for
// the namespace's worker and waits for its answer or its context's end.
func (s *Store) enqueue(ns string, a *admission) error {
	ctx := a.ctx
	s.qmu.Lock()
	q := s.queues[ns]
	if q == nil {
		q = &queue{wake: make(chan struct{}, 1)}
		s.queues[ns] = q
	}
	q.waiting = append(q.waiting, a)
	start := !q.running
	q.running = true
	s.qmu.Unlock()
	if start {
		go s.drain(ns, q)
	} else {
		select { // the worker may be idle, waiting for work
		case q.wake <- struct{}{}:
		default:
		}
	}
	select {
	case err := <-a.done:
		return err
	case <-ctx.Done():
	}
	select { // the worker, bound by the same deadline, usually says more
	case err := <-a.done:
		return err
	case <-time.After(answerGrace):
		return fmt.Errorf("waiting for the earlier decisions in namespace %s: %w", ns, context.Cause(ctx))
	}
}

// answerGrace is how long a review whose context ended waits for the
// worker's own answer (which names what took the time).
const answerGrace = 50 * time.Millisecond

// drain decides and commits the namespace's queue, group by group, until it
// has been empty for Options.WorkerIdle. A worker that lives through a burst
// keeps the stack the policy evaluation grew (a new goroutine grows its
// stack again, copying it each time: a fifth of a review's CPU under load,
// measured with make bench-https).
func (s *Store) drain(ns string, q *queue) {
	workerIdle := s.opts.WorkerIdle
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		s.qmu.Lock()
		group := q.waiting
		q.waiting = nil
		s.qmu.Unlock()
		if len(group) > 0 {
			s.commit(ns, q, group)
			continue
		}
		idle.Reset(workerIdle)
		select {
		case <-q.wake:
			continue
		case <-idle.C:
		}
		s.qmu.Lock()
		if len(q.waiting) == 0 {
			q.running = false
			delete(s.queues, ns)
			s.qmu.Unlock()
			return
		}
		s.qmu.Unlock()
	}
}

// commit decides a group in order and writes its reservations in one
// update; after a conflict it waits a little (another replica is writing
// the same object: trying again at once would likely collide again), takes
// in the reviews that queued meanwhile, and decides the whole group again.
// It answers every review.
func (s *Store) commit(ns string, q *queue, group []*admission) {
	ctx, cancel := groupContext(group)
	defer func() { cancel() }()
	stale := ""
	for conflicts := 0; ; conflicts++ {
		if conflicts > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(rand.Int64N(int64(s.lastWrite.Load()) + 1))):
			}
			s.qmu.Lock()
			more := q.waiting
			q.waiting = nil
			s.qmu.Unlock()
			if len(more) > 0 {
				group = append(group, more...)
				cancel()
				ctx, cancel = groupContext(group)
			}
		}
		err := s.decideGroup(ctx, ns, group, conflicts, &stale)
		if err == nil || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			if err != nil && conflicts > 0 && ctx.Err() != nil {
				err = gaveUp(ns, conflicts, err)
			}
			answer(group, err)
			return
		}
		if s.opts.OnConflict != nil {
			s.opts.OnConflict()
		}
		if ctx.Err() != nil {
			answer(group, gaveUp(ns, conflicts+1, ctx.Err()))
			return
		}
	}
}

func gaveUp(ns string, conflicts int, err error) error {
	return fmt.Errorf("writing the reservation in GPUUsage %s/%s: gave up after %d conflicting writes: %w", ns, gpuadmitv1.ObjectName, conflicts, err)
}

// decideGroup reads the object, decides each review of group still waiting,
// and writes the reservations; a read, wait or write error is returned
// (the reviews' own decisions are kept in them). stale carries, from one
// attempt to the next, the resourceVersion the last write carried.
func (s *Store) decideGroup(ctx context.Context, ns string, group []*admission, conflicts int, stale *string) error {
	u, err := s.read(ctx, ns, *stale)
	if err != nil {
		return err
	}
	view, kept := s.withLost(ns, u)
	if err := s.caughtUp(ctx, view); err != nil {
		return err
	}
	var st gpuadmitv1.GPUUsageStatus
	if view != nil {
		st = *view.Status.DeepCopy()
	}
	changes := s.tidy(&st)
	s.mirrorStatus(ns, st)
	for _, a := range group {
		a.outcome = undecided
	}
	n := 0
	for _, a := range group {
		if a.decide == nil {
			a.outcome = allowed
			continue
		}
		if err := a.ctx.Err(); err != nil {
			a.outcome, a.err = failed, err // answered already: nothing to decide
			if conflicts > 0 {
				a.err = gaveUp(ns, conflicts, err)
			}
			continue
		}
		reserve, demand, err := a.decide()
		switch {
		case err != nil:
			a.outcome, a.err = failed, err
			continue
		case !reserve:
			a.outcome = allowed // or denied: the same answer here, nil
			continue
		}
		a.outcome = reserved
		st.Reservations = append(without(st.Reservations, a.uid), gpuadmitv1.Reservation{PodUID: a.uid, PodName: a.name,
			Demand: demandOf(demand), Writer: s.opts.Replica, AdmittedAt: metav1.NewTime(s.opts.Clock.Now())})
		s.mirrorStatus(ns, st) // the next review counts it
		n++
	}
	if n == 0 && len(changes) == 0 && !(kept && len(st.Reservations) > 0) {
		if kept {
			s.restored(ns) // nothing left to bring back
		}
		return nil
	}
	start := time.Now()
	*stale = "0"
	if u != nil {
		*stale = u.ResourceVersion
	}
	written, err := s.write(ctx, ns, u, st)
	took := time.Since(start)
	s.lastWrite.Store(int64(took))
	if s.opts.OnWrite != nil {
		s.opts.OnWrite(took, n)
	}
	if err != nil {
		if view != nil {
			s.mirror(ns, view) // what the object holds, without the group's
		}
		return err
	}
	if kept {
		s.restored(ns)
	}
	s.mirror(ns, written)
	ended := 0
	for _, reason := range changes {
		if reason != "" {
			s.ended(reason)
			ended++
		}
	}
	for _, a := range group {
		if a.decide == nil {
			a.removed = ended
		}
	}
	return nil
}

// answer tells every review of group its outcome. When the group could
// not be read or written (err), a review that reserved or was not decided
// gets err; one decided without a reservation keeps its answer (a denial
// that counted reservations which were not written can only over-count).
func answer(group []*admission, err error) {
	for _, a := range group {
		switch {
		case a.outcome == failed:
			a.done <- a.err
		case err != nil && (a.outcome == reserved || a.outcome == undecided):
			a.done <- err
		default:
			a.done <- nil
		}
	}
}

// groupContext lasts until the latest deadline of the group's reviews (each
// review still gives up at its own).
func groupContext(group []*admission) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, a := range group {
		d, ok := a.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}
