package admitqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// The gangs' holds are tidied with the reservations, in every round
// (tidy.go), by what this replica knows:
//
//	held, every admitted pod of the gang found absent ──▶ ended (Absent)
//	held or Consumed, some of its admitted pods found absent ──▶ those pods dropped; a slot given
//	  back for each whose own reservation was at least one slot's demand (in every family and
//	  dimension), up to min(the hold's minCount, the PodGroup's now) less the pods left (held again)
//	held, the PodGroup's minCount lowered ──▶ fewer slots (ended, Lowered, at none)
//	held, HoldTimeout since this replica first saw it ──▶ ended (Released), a Warning Event
//	any, its PodGroup deleted (the informer saw it go, or its deletion
//	  begin: it waits for its pods behind a finalizer) or re-created ──▶ removed
//	  (re-created: the informer holds another PodGroup of the name and saw the
//	  hold's deleted; one it did not see deleted may be the informer lagging
//	  behind a hold another replica wrote for the new PodGroup: kept, unless
//	  this replica has seen the two differ for HoldTimeout)
//	ended, HoldTimeout since this replica first saw it ended, and its PodGroup
//	  absent (an annotation gang's: always) ──▶ removed
//
// Every time is this replica's own (holdClock), never a writer's stamp.

// holdClock remembers when this replica first saw each hold, held and
// ended, on its clock.
type holdClock struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time // namespace -> hold key -> first seen
}

func (c *holdClock) init() { c.seen = map[string]map[string]time.Time{} }

// since is when this replica first saw key in ns (now, the first time).
func (c *holdClock) since(ns, key string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.seen[ns]
	if m == nil {
		m = map[string]time.Time{}
		c.seen[ns] = m
	}
	if t, ok := m[key]; ok {
		return t
	}
	m[key] = now
	return now
}

// keep forgets the holds of ns not in keys.
func (c *holdClock) keep(ns string, keys map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.seen[ns] {
		if !keys[k] {
			delete(c.seen[ns], k)
		}
	}
	if len(keys) == 0 {
		delete(c.seen, ns)
	}
}

// holdKey names one hold's life (a gang's hold is known by its first pod)
// in a state (held or ended).
func holdKey(h gpuadmitv1.GangHold, state string) string {
	first := types.UID("")
	if len(h.Pods) > 0 {
		first = h.Pods[0]
	}
	return h.Kind + "/" + h.Name + "/" + string(first) + "/" + state
}

// gangNote is a Warning Event to record once the round's write succeeded.
type gangNote struct {
	regarding corev1.ObjectReference
	message   string
}

// tidyHolds tidies st's holds (absent: the pods this round found absent,
// with the demand each one's reservation held), and reports whether it
// changed any, with the Events to record.
func (s *Store) tidyHolds(ns string, st *gpuadmitv1.GPUReservationSetStatus, absent map[types.UID]effective.Usage) (bool, []gangNote) {
	if len(st.Gangs) == 0 {
		s.holds.keep(ns, nil)
		return false, nil
	}
	now := s.opts.Clock.Now()
	keys := map[string]bool{}
	changed := false
	var notes []gangNote
	kept := make([]gpuadmitv1.GangHold, 0, len(st.Gangs))
	for _, h := range st.Gangs {
		group := s.groupAt(ns, h, now, keys)
		if group.gone {
			changed = true
			continue
		}
		was := h
		if h.Slots > 0 || h.Ended == gpuadmitv1.GangConsumed {
			h = dropAbsent(h, group.minCount, absent)
			changed = changed || !equalHold(h, was)
		}
		if h.Slots == 0 {
			key := holdKey(h, "ended")
			keys[key] = true
			keys[holdKey(h, "held")] = true // a Consumed hold given a slot back keeps its time held
			if (h.Kind == gpuadmitv1.GangOptIn || group.absent) && now.Sub(s.holds.since(ns, key, now)) >= s.opts.HoldTimeout {
				changed = true
				continue
			}
			kept = append(kept, h)
			continue
		}
		next, note := s.tidyHeld(ns, h, group, now, keys)
		changed = changed || !equalHold(next, h)
		if note != nil {
			notes = append(notes, *note)
		}
		kept = append(kept, next)
	}
	s.holds.keep(ns, keys)
	if changed {
		st.Gangs = kept
	}
	return changed, notes
}

// dropAbsent drops from hold h (held, or Consumed) its pods found absent
// (absent: each one's reserved demand), ending it (Absent) when none is
// left. Each dropped pod gives its slot back only if its own reservation
// was at least one slot's demand in every family and dimension (the
// counted total never rises above what was decided; a smaller pod's slot
// is lost, and its gang may stay short), and never beyond
// min(h's minCount, the PodGroup's now: groupMin, 0 unknown) less the pods
// left. A Consumed hold given a slot back holds room again.
func dropAbsent(h gpuadmitv1.GangHold, groupMin int32, absent map[types.UID]effective.Usage) gpuadmitv1.GangHold {
	slot := reservation.HoldDemand(h)
	pods := make([]types.UID, 0, len(h.Pods))
	back := int32(0)
	for _, uid := range h.Pods {
		d, gone := absent[uid]
		switch {
		case !gone:
			pods = append(pods, uid)
		case slot.Max(d).Sub(d).IsZero(): // d >= slot everywhere
			back++
		}
	}
	if len(pods) == len(h.Pods) {
		return h
	}
	h.Pods = pods
	if len(pods) == 0 {
		h.Slots, h.Ended = 0, gpuadmitv1.GangAbsent
		return h
	}
	whole := h.MinCount
	if groupMin > 0 {
		whole = min(whole, groupMin)
	}
	if n := min(h.Slots+back, whole-int32(len(pods))); n > h.Slots {
		h.Slots, h.Ended = n, ""
	}
	return h
}

// tidyHeld tidies a hold that still holds room (see above).
func (s *Store) tidyHeld(ns string, h gpuadmitv1.GangHold, group groupState, now time.Time, keys map[string]bool) (gpuadmitv1.GangHold, *gangNote) {
	if group.minCount > 0 && group.minCount < h.MinCount {
		if left := max(group.minCount-int32(len(h.Pods)), 0); left < h.Slots {
			h.Slots = left
		}
		if h.Slots == 0 {
			h.Ended = gpuadmitv1.GangLowered
			return h, nil
		}
	}
	key := holdKey(h, "held")
	keys[key] = true
	if now.Sub(s.holds.since(ns, key, now)) < s.opts.HoldTimeout {
		return h, nil
	}
	note := &gangNote{regarding: regardingHold(ns, h), message: fmt.Sprintf(
		"gang %s/%s: %d of its %d pods never came within %s of gpuadmit first seeing its hold; the room held for them (%d x %s) is released, and the gang's later pods are ordinary pods, each decided on its own",
		ns, h.Name, h.Slots, h.MinCount, s.opts.HoldTimeout, h.Slots, reservation.HoldDemand(h))}
	h.Slots, h.Ended = 0, gpuadmitv1.GangReleased
	return h, note
}

// groupState is what the PodGroup informer says of a hold's PodGroup.
type groupState struct {
	// gone: the informer saw it deleted (or its deletion begin), or holds
	// another of its name and saw the hold's deleted.
	// absent: the informer holds none of its name.
	// other: the informer holds another of its name and did not see the
	// hold's deleted (it may lag behind the writer of the hold).
	gone, absent, other bool
	// minCount is its gang policy's minCount now (0: unknown; 1: none).
	minCount int32
}

func (s *Store) groupOf(ns string, h gpuadmitv1.GangHold) groupState {
	if h.Kind != gpuadmitv1.GangPodGroup || s.groups == nil {
		return groupState{}
	}
	g, ok, err := s.groups.Get(ns, h.Name)
	switch {
	case err != nil:
		return groupState{}
	case ok && g.UID == h.PodGroupUID && g.Deleting:
		return groupState{gone: true}
	case ok && g.UID != h.PodGroupUID:
		gone := s.groups.Deleted(h.PodGroupUID)
		return groupState{gone: gone, other: !gone}
	case !ok:
		return groupState{gone: s.groups.Deleted(h.PodGroupUID), absent: true}
	}
	return groupState{minCount: max(g.MinCount, 1)}
}

// groupAt is groupOf, where another PodGroup of the hold's name counts
// as the hold's gone once this replica has seen them differ for
// HoldTimeout (an informer that lags that long, or a replica started after
// the hold's PodGroup was deleted, which never saw it go).
func (s *Store) groupAt(ns string, h gpuadmitv1.GangHold, now time.Time, keys map[string]bool) groupState {
	g := s.groupOf(ns, h)
	if !g.other {
		return g
	}
	key := holdKey(h, "other")
	keys[key] = true
	return groupState{gone: now.Sub(s.holds.since(ns, key, now)) >= s.opts.HoldTimeout}
}

// regardingHold is what a hold's Event is about: its PodGroup, or an
// annotation gang's first admitted pod.
func regardingHold(ns string, h gpuadmitv1.GangHold) corev1.ObjectReference {
	if h.Kind == gpuadmitv1.GangPodGroup {
		return corev1.ObjectReference{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup", Namespace: ns, Name: h.Name, UID: h.PodGroupUID}
	}
	ref := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: h.FirstPod}
	if len(h.Pods) > 0 {
		ref.UID = h.Pods[0]
	}
	return ref
}

// ReasonGangReleased is the reason of the Warning Event of a gang's hold
// released by the hold timeout.
const ReasonGangReleased = "GangHoldReleased"

// announce records the notes' Events (after the write that ended the holds).
func (s *Store) announce(ctx context.Context, notes []gangNote) {
	for _, n := range notes {
		s.opts.Log.Info("gang hold released", "namespace", n.regarding.Namespace, "gang", n.regarding.Name, "message", n.message)
		if s.events != nil {
			s.events.Warn(ctx, n.regarding, ReasonGangReleased, n.message)
		}
	}
}

func equalHold(a, b gpuadmitv1.GangHold) bool {
	return a.Slots == b.Slots && a.Ended == b.Ended && len(a.Pods) == len(b.Pods)
}
