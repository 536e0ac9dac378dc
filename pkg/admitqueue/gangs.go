package admitqueue

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/gang"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// A gang (pkg/gang) is admitted whole or not at all. Its first admitted
// pod holds room for the rest of the gang in the namespace's object, in
// the same write as the pod's own reservation: a hold of minCount-1 slots
// of the first pod's demand (gpuadmitv1.GangHold), which every replica
// counts as reserved (reservation.Countable). The gang's later pods
// consume the slots:
//
//	first pod ──decided as if (minCount-1) x its demand were reserved too──▶ denied: names the gang
//	    │ allowed: its reservation and the hold, in one write                 and the gangs holding room
//	    ▼
//	HELD (slots) ──a later pod of the gang admitted: one slot fewer, same write──▶ HELD (slots-1)
//	    │ the last slot consumed, the PodGroup's minCount lowered to what was admitted,
//	    │ the hold timeout passed on the tidying replica's clock (a Warning Event),
//	    │ or every admitted pod of the gang found absent
//	    ▼
//	ENDED (no slots; kept while the PodGroup exists, an annotation gang's for the
//	    hold timeout, so that the gang's later pods are ordinary pods) ──PodGroup deleted──▶ removed
//
// A later pod of a gang is decided counting its gang's hold with one slot
// fewer (it takes that slot: a larger pod must fit its excess); a pod
// beyond the gang's slots, or after its hold ended, is an ordinary pod. The
// API server's retry of a review already reserved is decided as before
// (again): it consumes no second slot.

// PodGroups is what the store reads of the PodGroups (*gang.Groups).
type PodGroups interface {
	gang.Lookup
	// Deleted reports whether the informer saw the PodGroup of uid deleted.
	Deleted(uid types.UID) bool
}

// MaxGangs bounds the holds of one namespace's object: a gang's first pod
// beyond it is refused while every hold still holds room (ended holds
// make way, the oldest first).
const MaxGangs = 500

// gangTurn is a review's part in its gang in this round.
type gangTurn struct {
	m gang.Member
	// hold is the index of the gang's live hold in the status (-1: none).
	hold int
	// replaced is the index of the hold of a PodGroup of the gang's name
	// that is gone (re-created), and dropped the index of the oldest ended
	// hold making way under MaxGangs (-1: none): a first pod removes them
	// in the write that reserves it, never when it is denied, waits, or is
	// a dry run (its decision does not count the replaced hold).
	replaced, dropped int
}

func (t gangTurn) first() bool { return !t.m.IsZero() && t.hold < 0 }
func (t gangTurn) later() bool { return !t.m.IsZero() && t.hold >= 0 }

// gangTurnOf says what r is to its gang, given st: none (an ordinary pod,
// a retry of a pod already reserved, a pod beyond its gang's slots or
// after its hold ended), its first pod, or a later one. An error is the
// pod's denial (what is wrong with its gang).
func (s *Store) gangTurnOf(ns string, r *review, st *gpuadmitv1.GPUReservationSetStatus) (gangTurn, error) {
	none := gangTurn{hold: -1, replaced: -1, dropped: -1}
	if r.req.Pod == nil || r.req.Claim != nil || slices.ContainsFunc(st.Reservations, func(x gpuadmitv1.Reservation) bool { return x.PodUID == r.uid }) {
		return none, nil
	}
	m, err := gang.Of(r.req.Pod, ns, s.lookup())
	if err != nil || m.IsZero() {
		return none, err
	}
	i, replaced, err := s.liveHold(ns, m, st)
	t := gangTurn{m: m, hold: -1, replaced: -1, dropped: -1}
	switch {
	case err != nil:
		return none, err
	case replaced:
		// a PodGroup re-created under the name, the old one seen deleted:
		// its hold goes in the write that reserves this first pod
		t.replaced = i
	case i >= 0 && (st.Gangs[i].Slots == 0 || slices.Contains(st.Gangs[i].Pods, r.uid)):
		return none, nil
	case i >= 0:
		t.hold = i
		return t, nil
	}
	return s.makeWay(ns, st, t)
}

// makeWay is first pod t's turn with room among the holds: under MaxGangs
// (or replacing a hold), or with the oldest ended hold to drop when it
// reserves; an error when every hold still holds room.
func (s *Store) makeWay(ns string, st *gpuadmitv1.GPUReservationSetStatus, t gangTurn) (gangTurn, error) {
	if t.replaced >= 0 || len(st.Gangs) < MaxGangs {
		return t, nil
	}
	if t.dropped = oldestEnded(st); t.dropped < 0 {
		s.metrics.Refused(RefusedLimit)
		return gangTurn{hold: -1, replaced: -1, dropped: -1}, fmt.Errorf("GPUReservationSet %s/%s holds room for %d gangs, its limit: %s is refused until one of them is whole or released; create the pod again later",
			ns, gpuadmitv1.ObjectName, len(st.Gangs), t.m)
	}
	return t, nil
}

// liveHold returns the index of m's gang's hold in st (-1: none), and
// whether it is the hold of a PodGroup re-created under the name which the
// informer saw deleted (gone, with its PodGroup: the write that reserves
// replaces it; st is not changed here). A hold of another UID the informer
// did not see deleted is an error: the informer may lag behind the writer
// of a live hold of the new PodGroup, which is never replaced.
func (s *Store) liveHold(ns string, m gang.Member, st *gpuadmitv1.GPUReservationSetStatus) (int, bool, error) {
	i := slices.IndexFunc(st.Gangs, func(h gpuadmitv1.GangHold) bool { return h.Kind == m.Kind && h.Name == m.Name })
	switch {
	case i < 0 || m.Matches(st.Gangs[i]):
		return i, false, nil
	case !s.groups.Deleted(st.Gangs[i].PodGroupUID):
		return -1, false, fmt.Errorf("%s: GPUReservationSet %s/%s holds room for PodGroup %s/%s of UID %s, which this replica of gpuadmit has not seen deleted (its view of the PodGroups may be behind); create the pod again shortly",
			m, ns, gpuadmitv1.ObjectName, ns, m.Name, st.Gangs[i].PodGroupUID)
	}
	return i, true, nil
}

// lookup is the PodGroups as pkg/gang reads them (nil: not read).
func (s *Store) lookup() gang.Lookup {
	if s.groups == nil {
		return nil
	}
	return s.groups
}

// oldestEnded is the index of the oldest hold that holds nothing any
// more; -1 when every hold still holds room.
func oldestEnded(st *gpuadmitv1.GPUReservationSetStatus) int {
	oldest := -1
	for i, h := range st.Gangs {
		if h.Slots == 0 && (oldest < 0 || h.HeldSince.Before(&st.Gangs[oldest].HeldSince)) {
			oldest = i
		}
	}
	return oldest
}

// gangReservations adjusts what a gang's pod counts: a later pod counts
// its own gang's hold with one slot fewer (the one it takes); a first pod
// does not count the hold it replaces (its PodGroup's, re-created).
func gangReservations(t gangTurn, st *gpuadmitv1.GPUReservationSetStatus, rs []reservation.Reservation) []reservation.Reservation {
	if t.first() && t.replaced >= 0 {
		old := st.Gangs[t.replaced]
		gone := reservation.HoldUID(old.Kind, old.Name)
		return slices.DeleteFunc(rs, func(x reservation.Reservation) bool { return x.Hold && x.UID == gone })
	}
	if !t.later() {
		return rs
	}
	h := st.Gangs[t.hold]
	own := reservation.HoldUID(h.Kind, h.Name)
	unconfirmed := false
	out := slices.DeleteFunc(rs, func(x reservation.Reservation) bool {
		mine := x.Hold && x.UID == own
		unconfirmed = unconfirmed || mine && x.Unconfirmed
		return mine
	})
	if less, ok := reservation.Hold(h, h.Slots-1); ok {
		less.Unconfirmed = unconfirmed // as countable counted it
		out = append(out, less)
	}
	return out
}

// decideWhole decides a gang's first pod, already allowed on its own
// (res), again as if the rest of its gang's demand were reserved too:
// minCount-1 more pods of its demand. Denied, the denial names the gang,
// and the gangs that hold room in the namespace.
func (s *Store) decideWhole(r *review, req decision.Request, t gangTurn, st *gpuadmitv1.GPUReservationSetStatus, res decision.Result) (decision.Result, error) {
	rest := reservation.Times(res.Reserve, int64(t.m.MinCount-1))
	whole := req
	whole.Reservations = append(slices.Clone(req.Reservations), reservation.Reservation{UID: reservation.HoldUID(t.m.Kind, t.m.Name),
		Name: reservation.HoldName(t.m.Kind, t.m.Name), Demand: rest, Hold: true})
	out, err := s.decider.Decide(r.ctx, whole)
	if err != nil || out.Allowed {
		return out, err
	}
	return wholeDenied(t, st, res.Reserve, out), nil
}

// wholeDenied is the denial of a gang's first pod (res) that fits on its
// own but not with its whole gang: it names the gang, what it needs, and
// the gangs that hold room in the namespace.
func wholeDenied(t gangTurn, st *gpuadmitv1.GPUReservationSetStatus, demand effective.Usage, res decision.Result) decision.Result {
	msg := fmt.Sprintf("%s needs %d x %s, which does not fit: %s", t.m, t.m.MinCount, demand, strings.Join(res.Denials, "; "))
	if others := holdsOf(t.m.Namespace, st); others != "" {
		msg += "; " + others
	}
	res.Denials = []string{msg + "; no pod of the gang is admitted until the whole gang fits"}
	return res
}

// holdsOf names the gangs holding room in the namespace.
func holdsOf(ns string, st *gpuadmitv1.GPUReservationSetStatus) string {
	var parts []string
	for _, h := range st.Gangs {
		if h.Slots > 0 {
			parts = append(parts, fmt.Sprintf("room held by gang %s/%s (%d pods still to come)", ns, h.Name, h.Slots))
		}
	}
	return strings.Join(parts, "; ")
}

// holdGang writes r's part in its gang into st, in the write that reserves
// r: a first pod's hold, or a later pod's slot taken.
func (s *Store) holdGang(r *review, t gangTurn, st *gpuadmitv1.GPUReservationSetStatus, demand effective.Usage) {
	switch {
	case t.first():
		// the replaced or dropped hold goes in this write (at most one of them)
		if i := max(t.replaced, t.dropped); i >= 0 {
			st.Gangs = slices.Delete(st.Gangs, i, i+1)
		}
		d, others := reservation.DemandOf(demand)
		st.Gangs = append(st.Gangs, gpuadmitv1.GangHold{Kind: t.m.Kind, Name: t.m.Name, PodGroupUID: t.m.UID, MinCount: t.m.MinCount,
			Slots: t.m.MinCount - 1, Demand: d, Families: others, Pods: []types.UID{r.uid}, FirstPod: podName(r.req),
			Writer: s.opts.Replica, HeldSince: metav1.NewTime(s.opts.Clock.Now())})
	case t.later():
		h := &st.Gangs[t.hold]
		h.Slots--
		h.Pods = append(slices.Clone(h.Pods), r.uid)
		if h.Slots == 0 {
			h.Ended = gpuadmitv1.GangConsumed
		}
	}
}

// gangDenial is the result that denies a pod whose gang is wrong.
func gangDenial(err error) decision.Result {
	return decision.Result{Denials: []string{err.Error()}}
}
