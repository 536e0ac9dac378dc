package decision

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// A pod naming an existing ResourceClaim (resourceClaimName) adds nothing
// to the quotas (the claim is charged once, on its own, however many pods
// share it), but it makes the claim burn the budgets while it runs (a
// claim burns its charge over the union of its pods' runs). So the
// budgets see the pod's demand as its own plus the charge of every claim
// it names that the ledger records: a pod naming a claim is denied once a
// budget covering the claim's resources is spent, and its
// activeDeadlineSeconds bounds the claim's burn through it. A claim the
// ledger has not recorded yet (created a moment ago) adds nothing: it was
// decided against the budgets at its own CREATE.

// namedClaims are the charges of the distinct claims the pod names by
// resourceClaimName that the ledger records with a non-zero charge.
func (d *Decider) namedClaims(pod *corev1.Pod) []effective.Usage {
	var out []effective.Usage
	seen := map[string]bool{}
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName == nil || seen[*rc.ResourceClaimName] {
			continue
		}
		seen[*rc.ResourceClaimName] = true
		if u, ok := d.snap.NamedClaimCharge(pod.Namespace, *rc.ResourceClaimName); ok && !u.IsZero() {
			out = append(out, u)
		}
	}
	return out
}

// budgetDemand is what the request burns per millisecond of its run: a
// claim's or a pod's own demand, and for a pod the charges of the claims
// it names (saturating: an overflow can only deny more). eff is the
// request's own effective usage (read, never changed).
func (d *Decider) budgetDemand(req *Request, eff effective.Usage) effective.Usage {
	if req.Claim != nil {
		return eff
	}
	named := d.namedClaims(req.Pod)
	if len(named) == 0 {
		return eff
	}
	out := effective.Usage{}
	for f, v := range eff {
		out[f] = v
	}
	for _, u := range named {
		for f, v := range u {
			out[f] = out[f].AddSat(v)
		}
	}
	return out
}
