package gpuusage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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

// Verdict is what an admission's decide function tells the worker.
type Verdict struct {
	// Reserve: allowed, and Demand is to be reserved (not a dry run, not
	// a pod without demand).
	Reserve bool
	Demand  effective.Vector
	// Wait: denied now, but the pod would fit once the namespace's
	// unconfirmed reservations end (pods no replica has recorded: a create
	// that failed after admission, or a review not sent by the API
	// server). The review waits for them, first in the queue, when they
	// can be confirmed before its deadline (see settle).
	Wait bool
}

// admission is one review waiting to be decided.
type admission struct {
	ctx    context.Context
	uid    types.UID
	name   string
	decide func() (Verdict, error) // nil: only tidy the object
	done   chan error              // buffered: the worker never blocks on it

	// removed counts the reservations the group's write removed (tidy).
	removed int

	// outcome of the last round of decisions, and err for failed;
	// blockers are the unconfirmed reservations a waiting review waits for.
	outcome  outcome
	err      error
	blockers []gpuadmitv1.Reservation
}

type outcome int

const (
	undecided outcome = iota
	answered          // decided, nothing to reserve: allowed without demand, a dry run, or denied
	reserved          // decided; its reservation is in the group's write
	waiting           // denied for now; waits for unconfirmed reservations to end
	failed            // decide failed, the review's context ended, or its reservation was refused
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
// (another replica wrote first) re-reads the object and decides again; a
// review whose context ends gets an error, never nil. A reservation is
// refused (an error) when the namespace holds MaxReservations already, or
// when the pod's UID is reserved with another name or demand, or recorded:
// a review never replaces another's reservation.
func (s *Store) Admit(ctx context.Context, ns string, uid types.UID, name string, decide func() (Verdict, error)) error {
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
		group := s.take(q)
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

// take empties the queue.
func (s *Store) take(q *queue) []*admission {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	group := q.waiting
	q.waiting = nil
	return group
}

// commit decides a group in order and writes its reservations in one
// update, round after round until every review is answered. After a
// conflict it waits a little (another replica is writing the same object:
// trying again at once would likely collide again); while the first
// undecided review waits for unconfirmed reservations, it waits for them to
// be confirmed (settle). Each new round takes in the reviews that queued
// meanwhile, behind the ones still undecided.
func (s *Store) commit(ns string, q *queue, group []*admission) {
	conflicts := 0
	stale := ""
	for len(group) > 0 {
		ctx, cancel := groupContext(group)
		err := s.decideGroup(ctx, ns, group, conflicts, &stale)
		switch {
		case err != nil && (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)):
			conflicts++
			if s.opts.OnConflict != nil {
				s.opts.OnConflict()
			}
			if ctx.Err() != nil {
				answer(group, gaveUp(ns, conflicts, ctx.Err()))
				cancel()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(rand.Int64N(int64(s.lastWrite.Load()) + 1))):
			}
		case err != nil:
			if conflicts > 0 && ctx.Err() != nil {
				err = gaveUp(ns, conflicts, err)
			}
			answer(group, err)
			cancel()
			return
		default:
			conflicts, stale = 0, ""
			group = answerDecided(group)
			if len(group) > 0 && group[0].outcome == waiting {
				s.settle(ctx, ns, group[0])
			}
		}
		cancel()
		group = append(group, s.take(q)...)
	}
}

func gaveUp(ns string, conflicts int, err error) error {
	return fmt.Errorf("writing the reservation in GPUUsage %s/%s: gave up after %d conflicting writes: %w", ns, gpuadmitv1.ObjectName, conflicts, err)
}

// decideGroup reads the object, decides the reviews of group in order (up
// to the first that waits), and writes the reservations; a read, wait or
// write error is returned (the reviews' own decisions are kept in them).
// stale carries, from one attempt to the next, the resourceVersion the last
// write carried.
func (s *Store) decideGroup(ctx context.Context, ns string, group []*admission, conflicts int, stale *string) error {
	if err := s.proveFresh(ctx, ns); err != nil {
		return err
	}
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
	n := s.decideInOrder(ns, group, &st, conflicts)
	if n == 0 && len(changes) == 0 && !(kept && len(st.Reservations) > 0) {
		if kept {
			s.restored(ns) // nothing left to bring back
		}
		return nil
	}
	return s.commitStatus(ctx, ns, group, u, view, st, changes, n, kept, stale)
}

// decideInOrder decides each review of group still undecided, adding the
// reservations to st, and stops at the first review that waits. It returns
// how many reservations it added.
func (s *Store) decideInOrder(ns string, group []*admission, st *gpuadmitv1.GPUUsageStatus, conflicts int) int {
	for _, a := range group {
		a.outcome, a.err, a.blockers = undecided, nil, nil
	}
	n := 0
	for _, a := range group {
		if a.decide == nil {
			a.outcome = answered
			continue
		}
		if err := a.ctx.Err(); err != nil {
			a.outcome, a.err = failed, err // answered already: nothing to decide
			if conflicts > 0 {
				a.err = gaveUp(ns, conflicts, err)
			}
			continue
		}
		a.outcome, a.err = s.decideOne(ns, a, st)
		switch a.outcome {
		case waiting:
			return n
		case reserved:
			n++
		}
	}
	return n
}

// decideOne decides a, refusing what a forged or repeated review could use
// to take or shrink a reservation, and adds a's reservation to st.
func (s *Store) decideOne(ns string, a *admission, st *gpuadmitv1.GPUUsageStatus) (outcome, error) {
	if s.ledger.Seen(a.uid) != "" {
		s.refused(RefusedDuplicate)
		return failed, fmt.Errorf("pod UID %s is already a recorded pod of namespace %s: a create review for it is not the API server's; nothing is reserved", a.uid, ns)
	}
	prior := slices.IndexFunc(st.Reservations, func(r gpuadmitv1.Reservation) bool { return r.PodUID == a.uid })
	if prior >= 0 { // decide as if the earlier review of this pod had not reserved
		s.mirrorStatus(ns, gpuadmitv1.GPUUsageStatus{Reservations: without(st.Reservations, a.uid)})
		defer s.mirrorStatus(ns, *st)
	}
	v, err := a.decide()
	switch {
	case err != nil:
		return failed, err
	case v.Wait:
		return s.waitOrAnswer(a, st)
	case !v.Reserve:
		return answered, nil
	case prior >= 0:
		return s.again(ns, a, st.Reservations[prior], v.Demand)
	case s.opts.MaxReservations > 0 && len(st.Reservations) >= s.opts.MaxReservations:
		s.refused(RefusedLimit)
		return failed, fmt.Errorf("GPUUsage %s/%s holds %d reservations of admitted pods that the watches have not recorded yet, its limit (admission.reservations.maxPerNamespace); "+
			"they end as their pods are recorded or found absent: create the pod again shortly", ns, gpuadmitv1.ObjectName, len(st.Reservations))
	}
	st.Reservations = append(st.Reservations, gpuadmitv1.Reservation{PodUID: a.uid, PodName: a.name,
		Demand: demandOf(v.Demand), Writer: s.opts.Replica, AdmittedAt: metav1.NewTime(s.opts.Clock.Now())})
	s.mirrorStatus(ns, *st) // the next review counts it
	s.dueAt(a.uid)          // its absence check is scheduled from now
	return reserved, nil
}

// again answers a second review of a pod already reserved: the API
// server's retry of the same review (same name, same demand) is allowed
// with the reservation it has; anything else is refused, and the
// reservation stays as it was.
func (s *Store) again(ns string, a *admission, prior gpuadmitv1.Reservation, demand effective.Vector) (outcome, error) {
	if prior.PodName == a.name && vectorOf(prior.Demand) == demand {
		return answered, nil
	}
	s.refused(RefusedDuplicate)
	return failed, fmt.Errorf("pod UID %s is already reserved in GPUUsage %s/%s as pod %q with %s; a review for the same UID with pod %q and %s is refused (a review never replaces a reservation)",
		a.uid, ns, gpuadmitv1.ObjectName, prior.PodName, vectorOf(prior.Demand), a.name, demand)
}

// commitStatus writes st (the group's reservations, tidied) with u's
// resourceVersion and, once written, counts what tidy removed.
func (s *Store) commitStatus(ctx context.Context, ns string, group []*admission, u, view *gpuadmitv1.GPUUsage,
	st gpuadmitv1.GPUUsageStatus, changes []string, n int, kept bool, stale *string) error {
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

// answerDecided answers the reviews of group that were decided and returns
// the others (the waiting one first), in order.
func answerDecided(group []*admission) []*admission {
	var rest []*admission
	for _, a := range group {
		switch a.outcome {
		case failed:
			a.done <- a.err
		case answered, reserved:
			a.done <- nil
		default:
			rest = append(rest, a)
		}
	}
	return rest
}

// answer tells every review of group its outcome. When the group could
// not be read or written (err), a review that reserved, waits or was not
// decided gets err; one decided without a reservation keeps its answer (a
// denial that counted reservations which were not written can only
// over-count).
func answer(group []*admission, err error) {
	for _, a := range group {
		switch {
		case a.outcome == failed:
			a.done <- a.err
		case err != nil && a.outcome != answered:
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
