package gpuusage

import (
	"context"
	"time"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
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
// decided (denied).
func (s *Store) waitOrDecide(r *review, st *gpuadmitv1.GPUUsageStatus) (outcome, error) {
	left, ok := s.waitLeft(r)
	if !ok {
		return decided, nil // no deadline (never hold the queue), or too close to it
	}
	now := s.opts.Clock.Now()
	var blockers []gpuadmitv1.Reservation
	for _, b := range st.Reservations {
		if b.PodUID == r.uid || b.RecordedResourceVersion != "" || s.ledger.Seen(b.PodUID) != "" {
			continue // its own, or a pod some replica recorded: it exists
		}
		if s.dueAt(b.PodUID).Sub(now) > left {
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

// waitAtCap decides whether a review that st's MaxReservations would
// refuse waits for one of them to end: only when one can end before the
// review's deadline (less waitMargin): a pod's that a replica recorded
// (removed once every live replica's watch passed it, a few writes), or
// one nobody recorded whose absence check is due in time (the due ones
// are its blockers, read as they fall due). Else it is refused at once.
func (s *Store) waitAtCap(r *review, st *gpuadmitv1.GPUUsageStatus) bool {
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
		case s.dueAt(b.PodUID).Sub(now) <= left:
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
	deadline, ok := r.ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := time.Until(deadline) - waitMargin
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
		switch wait := s.dueAt(r.PodUID).Sub(now); {
		case wait > 0:
			next = min(next, wait)
		case !s.absence.isAbsent(r.PodUID) && len(due) < max(s.opts.ReadsPerSecond, 1):
			due = append(due, r)
		}
	}
	if len(due) > 0 {
		for _, r := range due {
			s.checked(r.PodUID)
		}
		s.confirmAbsent(ctx, ns, due)
		return
	}
	if d, ok := w.ctx.Deadline(); ok {
		next = min(next, max(time.Until(d)-waitMargin, 0))
	}
	t := time.NewTimer(next)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
