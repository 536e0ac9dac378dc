package reservation

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// A gang's hold (gpuadmitv1.GangHold) is counted as one reservation of
// its remaining slots x one slot's demand, under a key no pod or claim
// can have (HoldUID, HoldName): no ledger records it, so every replica
// counts it until the hold's slots are consumed or it ends. It is
// Unconfirmed while none of its admitted pods is known to exist
// (HoldUnconfirmed): a hold started by a review that was not the API
// server's (a forged gang's "first pod") is then no more than that pod's
// own reservation, which a review denied only by unconfirmed reservations
// waits for (the hold ends with it, once every admitted pod of the gang is
// found absent). Once a pod of the gang is recorded, the hold is an
// ordinary one: counted, never waited for.

// HoldUID is the UID under which the hold of gang kind/name is counted.
func HoldUID(kind, name string) types.UID { return types.UID(holdPrefix + kind + "/" + name) }

// HoldName is the name under which it is counted (no pod's name has a
// '/').
func HoldName(kind, name string) string { return holdPrefix + kind + "/" + name }

const holdPrefix = "gang/"

// IsHoldKey reports whether uid has the form of a hold's key (HoldUID:
// "gang/" then kind/name). No pod's UID has it (the API server sets UUIDs),
// nor a UID-less review's namespace/name key (a pod's name has no '/'); a
// review that carries one is forged, and refused before it is decided.
func IsHoldKey(uid types.UID) bool {
	rest, ok := strings.CutPrefix(string(uid), holdPrefix)
	return ok && strings.Contains(rest, "/")
}

// Hold is hold h counted with slots slots (h.Slots, or fewer for the pod
// of the gang that consumes one); false when that holds nothing.
func Hold(h gpuadmitv1.GangHold, slots int32) (Reservation, bool) {
	d := HoldDemand(h)
	if slots <= 0 || d.IsZero() {
		return Reservation{}, false
	}
	return Reservation{UID: HoldUID(h.Kind, h.Name), Name: HoldName(h.Kind, h.Name), Demand: Times(d, int64(slots)), Hold: true}, true
}

// HoldDemand is one slot's demand per family.
func HoldDemand(h gpuadmitv1.GangHold) effective.Usage {
	return UsageOf(gpuadmitv1.Reservation{Demand: h.Demand, Families: h.Families})
}

// Times is u x n per family and dimension, saturating at the largest
// int64 (an overflow over-counts: it denies, never admits).
func Times(u effective.Usage, n int64) effective.Usage {
	out := effective.Usage{}
	for f, v := range u {
		out[f] = effective.Vector{GPU: mul(v.GPU, n), MemMiB: mul(v.MemMiB, n), Cores: mul(v.Cores, n)}
	}
	return out
}

func mul(a, n int64) int64 {
	if a <= 0 || n <= 0 {
		return 0
	}
	if a > math.MaxInt64/n {
		return math.MaxInt64
	}
	return a * n
}

// HoldUnconfirmed reports whether hold h of st is unconfirmed by the
// object alone: it has admitted pods, and each of them still has its
// reservation in st, unmarked (no replica recorded it). A pod whose
// reservation is gone was recorded (a reservation ends otherwise only by
// its pod found absent, which removes the pod from the hold too). A
// replica whose own ledger recorded a pod marks its reservation in the
// round's first step, before that round decides anything.
func HoldUnconfirmed(st gpuadmitv1.GPUReservationSetStatus, h gpuadmitv1.GangHold) bool {
	if len(h.Pods) == 0 {
		return false
	}
	for _, uid := range h.Pods {
		i := slices.IndexFunc(st.Reservations, func(r gpuadmitv1.Reservation) bool { return r.PodUID == uid })
		if i < 0 || st.Reservations[i].RecordedResourceVersion != "" {
			return false
		}
	}
	return true
}

// countableHolds appends to out the holds of st that hold something.
func countableHolds(st gpuadmitv1.GPUReservationSetStatus, out []Reservation) []Reservation {
	for _, h := range st.Gangs {
		if r, ok := Hold(h, h.Slots); ok {
			r.Unconfirmed = HoldUnconfirmed(st, h)
			out = append(out, r)
		}
	}
	return out
}

// validateHolds checks the holds of an object read from the API server.
func validateHolds(u *gpuadmitv1.GPUReservationSet) error {
	seen := make(map[string]bool, len(u.Status.Gangs))
	for i, h := range u.Status.Gangs {
		where := fmt.Sprintf("GPUReservationSet %s/%s: gang hold %d (%s %q)", u.Namespace, u.Name, i, h.Kind, h.Name)
		key := h.Kind + "/" + h.Name
		switch {
		case h.Kind != gpuadmitv1.GangPodGroup && h.Kind != gpuadmitv1.GangOptIn:
			return fmt.Errorf("%s: kind is neither %s nor %s", where, gpuadmitv1.GangPodGroup, gpuadmitv1.GangOptIn)
		case h.Name == "":
			return fmt.Errorf("%s: no name", where)
		case seen[key]:
			return fmt.Errorf("%s: held twice", where)
		case h.MinCount < 2 || h.MinCount > gpuadmitv1.MaxGangMinCount:
			return fmt.Errorf("%s: minCount %d is not within 2..%d", where, h.MinCount, gpuadmitv1.MaxGangMinCount)
		case h.Slots < 0 || h.Slots >= h.MinCount:
			return fmt.Errorf("%s: %d slots for a gang of %d", where, h.Slots, h.MinCount)
		case len(h.Pods) > int(h.MinCount):
			return fmt.Errorf("%s: %d pods for a gang of %d", where, len(h.Pods), h.MinCount)
		case negative(gpuadmitv1.Reservation{Demand: h.Demand, Families: h.Families}):
			return fmt.Errorf("%s: a negative demand", where)
		}
		seen[key] = true
	}
	return nil
}
