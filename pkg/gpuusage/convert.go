package gpuusage

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// validate checks an object read from the API server: a malformed one (an
// edit by hand the schema let through) fails closed for its namespace.
func validate(u *gpuadmitv1.GPUUsage) error {
	if rv := u.Status.RemovedResourceVersion; rv != "" {
		if _, ok := parseRV(rv); !ok {
			return fmt.Errorf("GPUUsage %s/%s: removedResourceVersion %q is not a resourceVersion", u.Namespace, u.Name, rv)
		}
	}
	seen := make(map[types.UID]bool, len(u.Status.Reservations))
	for i, r := range u.Status.Reservations {
		switch {
		case r.PodUID == "":
			return fmt.Errorf("GPUUsage %s/%s: reservation %d has no podUID", u.Namespace, u.Name, i)
		case seen[r.PodUID]:
			return fmt.Errorf("GPUUsage %s/%s: pod %s is reserved twice", u.Namespace, u.Name, r.PodUID)
		case r.Demand.GPU < 0 || r.Demand.GPUMem < 0 || r.Demand.GPUCores < 0:
			return fmt.Errorf("GPUUsage %s/%s: reservation of pod %s has a negative demand", u.Namespace, u.Name, r.PodUID)
		case r.RecordedResourceVersion != "":
			if _, err := strconv.ParseUint(r.RecordedResourceVersion, 10, 64); err != nil {
				return fmt.Errorf("GPUUsage %s/%s: reservation of pod %s: recordedResourceVersion %q is not a resourceVersion",
					u.Namespace, u.Name, r.PodUID, r.RecordedResourceVersion)
			}
		}
		seen[r.PodUID] = true
	}
	return nil
}

// countable returns the reservations of u a replica whose pod watch reached
// podsRV must count: those whose pod its ledger has not recorded, unless the
// pod was recorded (by some replica) at a resourceVersion its watch passed
// already (then its ledger holds the pod, or saw it go).
func countable(u *gpuadmitv1.GPUUsage, l *ledger.Ledger, podsRV uint64) []ledger.Reservation {
	out := make([]ledger.Reservation, 0, len(u.Status.Reservations))
	for _, r := range u.Status.Reservations {
		if rv, ok := parseRV(r.RecordedResourceVersion); ok && podsRV >= rv {
			continue
		}
		if l.Seen(r.PodUID) != "" {
			continue
		}
		out = append(out, ledger.Reservation{UID: r.PodUID, Name: r.PodName, Demand: vectorOf(r.Demand),
			Unconfirmed: r.RecordedResourceVersion == ""})
	}
	return out
}

func vectorOf(d gpuadmitv1.Demand) effective.Vector {
	return effective.Vector{GPU: d.GPU, MemMiB: d.GPUMem, Cores: d.GPUCores}
}

func demandOf(v effective.Vector) gpuadmitv1.Demand {
	return gpuadmitv1.Demand{GPU: v.GPU, GPUMem: v.MemMiB, GPUCores: v.Cores}
}

// parseRV reads a resourceVersion as the integer etcd makes it.
func parseRV(rv string) (uint64, bool) {
	if rv == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}
