package admitqueue

import (
	"cmp"
	"context"
	"slices"
	"time"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// A review denied only because of unconfirmed reservations (admissions
// whose pod no replica has recorded) waits for them, at the head of the
// namespace's queue, rather than being denied at once: such a reservation
// is usually a create that failed after gpuadmit admitted it (another
// admission plugin refused it) or a review that was not the API server's,
// and it ends when a read confirms its pod absent, confirmAfter after it was
// first seen. Waiting in order keeps later reviews (forged ones included)
// from taking the room the waiting review waits for:
//
//	decide ──denied, fits without the unconfirmed──▶ WAITING (first in the queue)
//	                                                    │ every blocker due before the
//	   the deadline is near, or a blocker is due        │ review's deadline: read the due
//	   too late: answered with its denial               │ ones, re-decide every recheckWait
//	                                                    ▼
//	                             a blocker recorded (a real pod): denied; all found absent:
//	                             removed in the same write that reserves for the review
//
// A review that the namespace's MaxReservations would refuse waits the same
// way (waitAtCap) while one of the reservations can end before its
// deadline, and is refused only when none can.

// Several reviews may wait at once. Each holds the room it waits for: the
// reviews after it are decided counting its demand as an unconfirmed
// reservation, so that no later review (a forged one included) takes that
// room, while one that fits beside it is decided at once. A dry run (a
// tenant's `gpuadmit eval`, kubectl create --dry-run=server) waits as a
// create would, to answer what a create would get, but holds nothing: it
// is never admitted, so the room it would hold would only deny genuine
// creates. When room frees, the reviews that waited are decided again
// smallest first: a stream of forged whole-quota reviews, each waiting for
// the one before, would otherwise stay ahead of every genuine create that
// fits (each forged reservation holds the room for confirmAfter, longer
// than a review that queued behind it can wait).

// smallestWaitingFirst orders the reviews that waited in the last round
// (at the front of the batch, in the order they arrived) by their demand,
// smallest first, keeping that order among equals; the others stay behind
// them in order.
func smallestWaitingFirst(reviews []*review) {
	n := 0
	for n < len(reviews) && reviews[n].outcome == waiting {
		n++
	}
	slices.SortStableFunc(reviews[:n], func(a, b *review) int { return compareSize(a.result.Effective, b.result.Effective) })
}

// compareSize orders demands: by the memory of every family, then by the
// devices.
func compareSize(a, b effective.Usage) int {
	var am, ag, bm, bg int64
	for _, v := range a {
		am, ag = am+v.MemMiB, ag+v.GPU
	}
	for _, v := range b {
		bm, bg = bm+v.MemMiB, bg+v.GPU
	}
	return cmp.Or(cmp.Compare(am, bm), cmp.Compare(ag, bg))
}

// heldFor is the room held for a review that waits: its user's, so that
// the per-user limits of the teams count it for the user it is charged to.
func heldFor(r *review) reservation.Reservation {
	return reservation.Reservation{UID: r.uid, Name: podName(r.req), User: chargedUser(r.req), Demand: r.result.Effective, Unconfirmed: true}
}

// waitMargin: a waiting review is answered (with its denial) this long
// before its deadline; recheckWait: how often it is decided again while
// it waits.
const (
	waitMargin  = time.Second
	recheckWait = 250 * time.Millisecond
)

// waitOrDecide decides whether a review that fits without the unconfirmed
// reservations of st waits for them: only when every one of them is due to
// be checked before the review's deadline (less waitMargin); else it is
// decided (denied). A gang's hold counted as unconfirmed
// (reservation.HoldUnconfirmed) needs no blocker of its own: each of its
// admitted pods has its reservation, unmarked, in st, so among these
// blockers; once all are found absent, the round that removes them ends
// the hold (tidyHeld) before the review is decided again.
func (s *Store) waitOrDecide(r *review, st *gpuadmitv1.GPUReservationSetStatus, teams []*team) (outcome, error) {
	left, ok := s.waitLeft(r)
	if !ok {
		return decided, nil // no deadline (never hold the queue), or too close to it
	}
	now := s.opts.Clock.Now()
	var blockers []gpuadmitv1.Reservation
	for _, b := range withTeams(st, teams) {
		if b.PodUID == r.uid || b.RecordedResourceVersion != "" || s.ledger.Seen(b.PodUID) != "" ||
			slices.ContainsFunc(blockers, func(x gpuadmitv1.Reservation) bool { return x.PodUID == b.PodUID }) {
			continue // its own, a pod some replica recorded (it exists), or one already a blocker (in the namespace's object and a team's)
		}
		if s.confirmer.DueAt(b.PodUID).Sub(now) > left {
			return decided, nil
		}
		blockers = append(blockers, b)
	}
	if len(blockers) == 0 {
		return decided, nil
	}
	r.blockers = blockers
	return waiting, nil
}

// withTeams lists the reservations of st and of the teams' objects (a
// team's entry names its namespace: its absence is read there).
func withTeams(st *gpuadmitv1.GPUReservationSetStatus, teams []*team) []gpuadmitv1.Reservation {
	if len(teams) == 0 {
		return st.Reservations
	}
	out := slices.Clone(st.Reservations)
	for _, t := range teams {
		out = append(out, t.status.Reservations...)
	}
	return out
}

// waitAtCap decides whether a review that st's MaxReservations would
// refuse waits for one of them to end: only when one can end before the
// review's deadline (less waitMargin): a pod's that a replica recorded
// (removed once every live replica's watch passed it, a few writes), or
// one nobody recorded whose absence check is due in time (the due ones
// are its blockers, read as they fall due). Else it is refused at once.
func (s *Store) waitAtCap(r *review, st *gpuadmitv1.GPUReservationSetStatus) bool {
	left, ok := s.waitLeft(r)
	if !ok {
		return false
	}
	now := s.opts.Clock.Now()
	ends := false
	var blockers []gpuadmitv1.Reservation
	for _, b := range st.Reservations {
		recorded := b.RecordedResourceVersion != "" || s.ledger.Seen(b.PodUID) != ""
		switch {
		case b.PodUID == r.uid:
		case recorded && b.ClaimName == "":
			ends = true // ends as the watches pass it
		case recorded: // a claim's ends only when the claim is gone
		case s.confirmer.DueAt(b.PodUID).Sub(now) <= left:
			ends = true
			blockers = append(blockers, b)
		}
	}
	r.blockers = blockers
	return ends
}

// waitLeft is how long a review may still wait: until its deadline less
// waitMargin; false when it has no deadline (it never holds the queue) or
// none of that is left.
func (s *Store) waitLeft(r *review) (time.Duration, bool) {
	if r.deadline.IsZero() {
		return 0, false
	}
	left := r.deadline.Sub(s.opts.Clock.Now()) - waitMargin
	return left, left > 0
}

// settle lets a waiting review's blockers move: it reads the pods of those
// due (at most ReadsPerSecond at once) and returns to be decided again, or
// waits until the next is due, recheckWait, or the review's deadline less
// waitMargin, whichever comes first.
func (s *Store) settle(ctx context.Context, ns string, w *review) {
	now := s.opts.Clock.Now()
	next := recheckWait
	var due []gpuadmitv1.Reservation
	for _, r := range w.blockers {
		switch wait := s.confirmer.DueAt(r.PodUID).Sub(now); {
		case wait > 0:
			next = min(next, wait)
		case !s.confirmer.IsAbsent(r.PodUID) && len(due) < max(s.opts.ReadsPerSecond, 1):
			due = append(due, r)
		}
	}
	if len(due) > 0 {
		for _, r := range due {
			s.confirmer.Checked(r.PodUID)
		}
		s.confirmer.ConfirmEach(ctx, ns, due)
		return
	}
	if left, ok := s.waitLeft(w); ok {
		next = min(next, left)
	} else if !w.deadline.IsZero() {
		next = 0
	}
	s.sleep(ctx, next)
}

// sleep waits d on the store's clock, or until ctx ends.
func (s *Store) sleep(ctx context.Context, d time.Duration) {
	t := s.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}
