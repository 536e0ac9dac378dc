package reservation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// Validate checks an object read from the API server: a malformed one (an
// edit by hand the schema let through) fails closed for its namespace.
func Validate(u *gpuadmitv1.GPUReservationSet) error {
	if rv := u.Status.RemovedResourceVersion; rv != "" && !resourceversion.Valid(rv) {
		return fmt.Errorf("GPUReservationSet %s/%s: removedResourceVersion %q is not a resourceVersion", u.Namespace, u.Name, rv)
	}
	seen := make(map[types.UID]bool, len(u.Status.Reservations))
	for i, r := range u.Status.Reservations {
		switch {
		case r.PodUID == "":
			return fmt.Errorf("GPUReservationSet %s/%s: reservation %d has no podUID", u.Namespace, u.Name, i)
		case seen[r.PodUID]:
			return fmt.Errorf("GPUReservationSet %s/%s: pod %s is reserved twice", u.Namespace, u.Name, r.PodUID)
		case negative(r):
			return fmt.Errorf("GPUReservationSet %s/%s: reservation of pod %s has a negative demand", u.Namespace, u.Name, r.PodUID)
		case r.RecordedResourceVersion != "" && !resourceversion.Valid(r.RecordedResourceVersion):
			return fmt.Errorf("GPUReservationSet %s/%s: reservation of pod %s: recordedResourceVersion %q is not a resourceVersion",
				u.Namespace, u.Name, r.PodUID, r.RecordedResourceVersion)
		}
		seen[r.PodUID] = true
	}
	return validateHolds(u)
}

// Countable is the replica's half of the counting rule: the reservations
// of st that a replica whose pod watch reached podsRV hands its ledger to
// count: all but those recorded (by any replica) at a resourceVersion its
// watch passed (its ledger holds the pod, or saw it go). The ledger,
// counting them, leaves out those it recorded itself (Counts). A
// reservation no replica recorded is Unconfirmed. The gangs' holds are
// counted beside them, each as one reservation of its remaining slots
// (gangs.go).
func Countable(st gpuadmitv1.GPUReservationSetStatus, podsRV string) []Reservation {
	out := make([]Reservation, 0, len(st.Reservations))
	for _, r := range st.Reservations {
		if r.ClaimName != "" { // counted until its claim is gone (the ledger skips it once it records the claim)
			out = append(out, Reservation{UID: r.PodUID, Name: ClaimKey(r.ClaimName), Namespace: r.Namespace, User: r.User,
				Demand: UsageOf(r), Unconfirmed: r.RecordedResourceVersion == ""})
			continue
		}
		if r.RecordedResourceVersion != "" && resourceversion.AtLeast(podsRV, r.RecordedResourceVersion) {
			continue
		}
		out = append(out, Reservation{UID: r.PodUID, Name: r.PodName, Namespace: r.Namespace, User: r.User,
			Demand: UsageOf(r), Unconfirmed: r.RecordedResourceVersion == ""})
	}
	return countableHolds(st, out)
}

// ClaimKey is the name under which a claim's reservation and the ledger's
// record of the claim are matched (Counts' NameHeldByOther): a pod's is its
// name, a claim's its name under a prefix no pod name can have.
func ClaimKey(name string) string { return claimPrefix + name }

const claimPrefix = "resourceclaim/"

// nvidia is the family whose demand a reservation keeps in Demand (every
// other family's is in Families).
const nvidia = effective.NvidiaName

// negative reports whether a reservation has a negative demand anywhere.
func negative(r gpuadmitv1.Reservation) bool {
	neg := func(d gpuadmitv1.Demand) bool { return d.GPU < 0 || d.GPUMem < 0 || d.GPUCores < 0 }
	if neg(r.Demand) {
		return true
	}
	for _, d := range r.Families {
		if neg(d) {
			return true
		}
	}
	return false
}

// UsageOf is a reservation's demand per family.
func UsageOf(r gpuadmitv1.Reservation) effective.Usage {
	u := effective.UsageOf(nvidia, vectorOf(r.Demand))
	for f, d := range r.Families {
		if f == nvidia {
			continue // written by nobody; never counted twice
		}
		u, _ = u.Add(effective.UsageOf(f, vectorOf(d)))
	}
	return u
}

// DemandOf splits a demand per family into a reservation's Demand (the
// nvidia family's) and Families (every other family's).
func DemandOf(u effective.Usage) (gpuadmitv1.Demand, map[string]gpuadmitv1.Demand) {
	var others map[string]gpuadmitv1.Demand
	for f, v := range u {
		if f == nvidia || v.IsZero() {
			continue
		}
		if others == nil {
			others = map[string]gpuadmitv1.Demand{}
		}
		others[f] = vectorDemand(v)
	}
	return vectorDemand(u.Of(nvidia)), others
}

func vectorOf(d gpuadmitv1.Demand) effective.Vector {
	return effective.Vector{GPU: d.GPU, MemMiB: d.GPUMem, Cores: d.GPUCores}
}

func vectorDemand(v effective.Vector) gpuadmitv1.Demand {
	return gpuadmitv1.Demand{GPU: v.GPU, GPUMem: v.MemMiB, GPUCores: v.Cores}
}
