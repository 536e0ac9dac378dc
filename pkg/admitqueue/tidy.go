package admitqueue

import (
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// tidy applies to st what this replica knows, as the first step of every
// round:
//
//	reserved, this ledger recorded the pod ──▶ marked (recordedResourceVersion: the pod's)
//	marked, every live replica's watch passed the mark ──▶ removed (removedResourceVersion advances)
//	reserved, every live replica's watch passed this ledger's record ──▶ removed at once (no mark)
//	unmarked, a read confirmed the pod absent ──▶ removed
//	a claim's: marked when recorded; removed only when a read confirmed the claim gone
//
// It returns the reasons of the changes (EndRecorded, EndAbsent; "" for a
// mark, or a change of a gang's hold), counted once the write succeeded,
// and the Events to record then (gangtidy.go tidies the holds).
func (s *Store) tidy(ns string, st *gpuadmitv1.GPUReservationSetStatus) (changes []string, notes []gangNote) {
	least, live := s.members.MinLive()
	kept := st.Reservations[:0:0]
	absent := map[types.UID]effective.Usage{} // the pods found absent, with their reserved demand
	for _, r := range st.Reservations {
		switch seen := s.ledger.Seen(r.PodUID); {
		case r.ClaimName != "" && (s.confirmer.IsAbsent(r.PodUID) || s.ledger.Gone(r.PodUID)):
			changes = append(changes, EndAbsent)
			continue
		case r.ClaimName != "":
			if seen != "" && r.RecordedResourceVersion == "" {
				s.confirmer.Recorded(r.PodUID, s.opts.Clock.Now(), s.members.SuspectSince())
				r.RecordedResourceVersion = s.recordedAt(seen)
				changes = append(changes, "")
			}
		case live && resourceversion.AtLeast(least, s.markOf(r, seen)):
			// every live replica's watch passed the mark, or, unmarked, this
			// one's record of the pod (removed in the write that would mark it)
			changes = append(changes, EndRecorded)
			st.RemovedResourceVersion = resourceversion.Max(st.RemovedResourceVersion, s.markOf(r, seen))
			continue
		case r.RecordedResourceVersion != "": // marked; a watch is behind it
		case seen != "":
			s.confirmer.Recorded(r.PodUID, s.opts.Clock.Now(), s.members.SuspectSince())
			r.RecordedResourceVersion = s.recordedAt(seen)
			changes = append(changes, "") // changed, nothing ended
		case s.confirmer.IsAbsent(r.PodUID):
			changes = append(changes, EndAbsent)
			absent[r.PodUID] = reservation.UsageOf(r)
			continue
		}
		kept = append(kept, r)
	}
	st.Reservations = kept
	changed, notes := s.tidyHolds(ns, st, absent)
	if changed {
		changes = append(changes, "")
	}
	return changes, notes
}

// markOf is the resourceVersion every live replica's watch must pass
// before pod reservation r is removed: its mark, else this ledger's record
// of the pod (seen), else "" (never passed).
func (s *Store) markOf(r gpuadmitv1.Reservation, seen string) string {
	switch {
	case r.RecordedResourceVersion != "":
		return r.RecordedResourceVersion
	case seen != "":
		return s.recordedAt(seen)
	}
	return ""
}

// recordedAt is the resourceVersion to publish for a pod this ledger
// recorded: the pod's own, or (for an object without one) how far the pod
// watch got.
func (s *Store) recordedAt(seen string) string {
	if resourceversion.Valid(seen) {
		return seen
	}
	return s.watch.PodsResourceVersion()
}
