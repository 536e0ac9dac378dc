package admitqueue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// A batch is committed round after round until every review is answered.
// One round:
//
//	load ──▶ prove this replica's view (fresh.go), read the object (after a
//	         conflict: once the informer has the winner's write), add the
//	         reservations of a deleted object (repair.go), wait until the pod
//	         watch passed removedResourceVersion
//	tidy ──▶ mark what this replica recorded, remove what every live replica
//	         passed or a read found absent (tidy.go)
//	decide ▶ the undecided reviews in order, each counting the reservations
//	         before it, up to the first that waits (decide.go)
//	write ─▶ one status update with the object's resourceVersion, when
//	         anything changed; a conflict starts the round again
//
// Between rounds the batch takes in the work that queued meanwhile, behind
// the reviews still undecided; while the first of them waits for
// unconfirmed reservations, the round waits for those (settle.go).

// batch is the work of one namespace the worker commits together.
type batch struct {
	reviews []*review
	tidies  []*tidyJob
	// removed is what the last round's write removed (for the tidy jobs).
	removed int
}

func (b batch) empty() bool { return len(b.reviews) == 0 && len(b.tidies) == 0 }

// attempt is what one try of a round tells the next: how many conflicts
// there were, the resourceVersion the refused write carried ("0" for a
// create; "" when the last write did not conflict), and whether the last
// conflict is still to be counted (by the cause the next read finds).
type attempt struct {
	conflicts int
	refused   string
	uncounted bool
	// teamRefused names the team quota whose object refused the last
	// write ("": none), teamRV the resourceVersion that write carried.
	teamRefused, teamRV string
}

// countConflict counts the last conflict, by the cause of the write that
// won: u is the object read after it (nil: none, or the read failed).
func (s *Store) countConflict(try *attempt, u *gpuadmitv1.GPUReservationSet) {
	if !try.uncounted {
		return
	}
	try.uncounted = false
	cause := ConflictUnknown
	if u != nil && (u.Status.LastWrite.Cause == ConflictAdmission || u.Status.LastWrite.Cause == ConflictTidy) {
		cause = u.Status.LastWrite.Cause
	}
	s.metrics.Conflict(cause)
}

// loaded is the namespace's object as a round reads it.
type loaded struct {
	obj    *gpuadmitv1.GPUReservationSet      // as read; nil when there is none
	status gpuadmitv1.GPUReservationSetStatus // obj's, with the kept reservations merged in
	kept   bool                               // reservations of a deleted object were merged in
}

// commit answers the batch, round after round. After a conflict it waits
// a little (another replica is writing the same object: trying again at
// once would likely collide again).
func (s *Store) commit(ns string, q *queue, b batch) {
	var try attempt
	for !b.empty() {
		ctx, cancel := b.context()
		err := s.round(ctx, ns, &b, &try)
		switch {
		case errors.Is(err, decision.ErrTeamsChanged) && ctx.Err() == nil:
			// a team quota selects the namespace since the round listed
			// the teams: the next round lists them again
			s.backOff(ctx)
		case err != nil && (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)):
			try.conflicts++
			try.uncounted = true // counted once the next round read the winner's write
			if ctx.Err() != nil {
				s.countConflict(&try, nil)
				b.fail(gaveUp(ns, try.conflicts, ctx.Err()))
				cancel()
				return
			}
			s.backOff(ctx)
		case err != nil:
			s.countConflict(&try, nil)
			if try.conflicts > 0 && ctx.Err() != nil {
				err = gaveUp(ns, try.conflicts, err)
			}
			b.fail(err)
			cancel()
			return
		default:
			try = attempt{}
			b = b.answerDecided()
			if len(b.reviews) > 0 && b.reviews[0].outcome == waiting {
				s.settle(ctx, ns, b.reviews[0])
			}
		}
		cancel()
		more := s.queues.take(q)
		b.reviews, b.tidies = append(b.reviews, more.reviews...), append(b.tidies, more.tidies...)
	}
}

// backOff waits a random time up to the last write's duration (on the
// store's clock).
func (s *Store) backOff(ctx context.Context) {
	d := time.Duration(rand.Int64N(s.lastWrite.Load() + 1))
	if d <= 0 {
		return
	}
	t := s.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

func gaveUp(ns string, conflicts int, err error) error {
	return fmt.Errorf("writing the reservation in GPUReservationSet %s/%s: gave up after %d conflicting writes: %w", ns, gpuadmitv1.ObjectName, conflicts, err)
}

// round is one try at the batch: load, tidy, decide, write (the teams'
// objects first, teams.go). A load or write error is returned; the
// reviews' own outcomes are kept in them.
func (s *Store) round(ctx context.Context, ns string, b *batch, try *attempt) error {
	v, err := s.load(ctx, ns, try.refused)
	if err != nil {
		return err
	}
	s.countConflict(try, v.obj)
	teams, err := s.roundTeams(ctx, ns, b, try)
	if err != nil {
		return err
	}
	st := *v.status.DeepCopy()
	ended, notes := s.tidy(ns, &st)
	added := s.decideInOrder(ns, b.reviews, &st, teams, try.conflicts)
	if err := teamsChanged(b.reviews); err != nil {
		return err // nothing written: decided again with the teams listed again
	}
	restores := v.kept && (len(st.Reservations) > 0 || len(st.Gangs) > 0) // a deleted object's reservations or holds to write back
	try.refused, try.teamRefused, try.teamRV = "", "", ""
	if err := s.writeTeams(ctx, teams, try); err != nil {
		return err
	}
	if added == 0 && len(ended) == 0 && !restores {
		if v.kept {
			s.lost.forget(ns) // nothing left to bring back
		}
		b.removed = 0
		return nil
	}
	try.refused = "0"
	if v.obj != nil {
		try.refused = v.obj.ResourceVersion
	}
	if err := s.writeObject(ctx, nsObject(ns), v.obj, st, added); err != nil {
		return err
	}
	if v.kept {
		s.lost.forget(ns)
	}
	b.removed = s.countEnded(ended)
	s.announce(ctx, notes)
	return nil
}

// roundTeams loads the teams that count ns when the batch has reviews (a
// tidy job of ns's object needs none).
func (s *Store) roundTeams(ctx context.Context, ns string, b *batch, try *attempt) ([]*team, error) {
	if len(b.reviews) == 0 {
		return nil, nil
	}
	names, err := s.teamsCounting(ctx, ns)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	return s.loadTeams(ctx, ns, names, try)
}

// load reads the namespace's object for a round (see above).
func (s *Store) load(ctx context.Context, ns, refused string) (loaded, error) {
	if err := s.proveFresh(ctx, ns); err != nil {
		return loaded{}, err
	}
	u, err := s.read(ctx, ns, refused)
	if err != nil {
		return loaded{}, err
	}
	v := loaded{obj: u}
	if u != nil {
		v.status = u.Status
	}
	v.status, v.kept = s.lost.merge(ns, v.status)
	if err := s.caughtUp(ctx, nsObject(ns), v.status.RemovedResourceVersion); err != nil {
		return loaded{}, err
	}
	return v, nil
}

// writeObject writes st as the status of the object key (u as read; nil:
// create it), timing the write.
func (s *Store) writeObject(ctx context.Context, key client.ObjectKey, u *gpuadmitv1.GPUReservationSet, st gpuadmitv1.GPUReservationSetStatus, reviews int) error {
	st.LastWrite = gpuadmitv1.LastWrite{Writer: s.opts.Replica, Cause: gpuadmitv1.WriteTidy}
	if reviews > 0 {
		st.LastWrite.Cause = gpuadmitv1.WriteAdmission
	}
	start := s.opts.Clock.Now()
	err := s.write(ctx, key, u, st)
	took := s.opts.Clock.Since(start)
	s.lastWrite.Store(int64(took))
	s.metrics.Wrote(took, reviews)
	return err
}

// countEnded counts, once their removal is written, the reservations
// tidy ended, and returns how many.
func (s *Store) countEnded(reasons []string) int {
	n := 0
	for _, reason := range reasons {
		if reason != "" {
			s.metrics.Ended(reason)
			n++
		}
	}
	return n
}

// answerDecided answers the reviews that were decided, and the tidy jobs,
// and returns the batch of the other reviews (the waiting one first), in
// order.
func (b batch) answerDecided() batch {
	var rest []*review
	for _, r := range b.reviews {
		switch r.outcome {
		case failed:
			r.done <- answer{err: r.err}
		case decided, reserving:
			r.done <- answer{result: r.result}
		default:
			rest = append(rest, r)
		}
	}
	for _, j := range b.tidies {
		j.done <- tidyAnswer{removed: b.removed}
	}
	return batch{reviews: rest}
}

// fail answers the whole batch when it could not be read or written
// (err): a review that reserved, waits or was not decided gets err; one
// decided without a reservation keeps its result (a denial that counted
// reservations which were not written can only over-count).
func (b batch) fail(err error) {
	for _, r := range b.reviews {
		switch r.outcome {
		case failed:
			r.done <- answer{err: r.err}
		case decided:
			r.done <- answer{result: r.result}
		default:
			r.done <- answer{err: err}
		}
	}
	for _, j := range b.tidies {
		j.done <- tidyAnswer{err: err}
	}
}

// context lasts until the latest deadline of the batch's work (each
// review still gives up at its own).
func (b batch) context() (context.Context, context.CancelFunc) {
	var latest time.Time
	deadlines := make([]context.Context, 0, len(b.reviews)+len(b.tidies))
	for _, r := range b.reviews {
		deadlines = append(deadlines, r.ctx)
	}
	for _, j := range b.tidies {
		deadlines = append(deadlines, j.ctx)
	}
	for _, c := range deadlines {
		d, ok := c.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}
