package decision

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Claims are decided like pods: the claim's demand (pkg/dra: the devices of
// the governed DeviceClasses it asks for, sized against the devices the
// ResourceSlices publish, else the largest device of the family) against
// the namespace's usage and reservations, by the same policies. The
// policies see the claim's identity in input.pod (its name, UID, labels and
// annotations: a claim has no containers, node selector or classes of a
// pod) and input.claim; its requests are input.demand's containers.

// GovernsClaim reports whether the claim asks for a device of a governed
// DeviceClass (any other claim is allowed on the fast path).
func (d *Decider) GovernsClaim(c *resourcev1.ResourceClaim) bool { return d.claims.Governs(&c.Spec) }

// Charger is the decider's claim charger.
func (d *Decider) Charger() *dra.Charger { return d.claims }

// ClaimDemand is the claim's demand as Decide computes it; an invalid
// request is an *effective.InvalidError.
func (d *Decider) ClaimDemand(c *resourcev1.ResourceClaim) (effective.Demands, error) {
	sizes := d.snap.Capacity().ResolveSizesFor(&corev1.Pod{}, d.families)
	opts := make(map[string]effective.Options, len(sizes))
	for f, size := range sizes {
		opts[f] = effective.Options{DeviceMemoryMiB: size}
	}
	return d.claims.Demands(c.Name, &c.Spec, c.Status.Allocation, d.snap.Inventory(), opts)
}

// claimPod is the identity of a claim as input.pod shows it.
func claimPod(c *resourcev1.ResourceClaim) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: *c.ObjectMeta.DeepCopy()}
}
