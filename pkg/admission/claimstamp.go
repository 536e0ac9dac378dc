package admission

import (
	"context"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// ClaimStamper is the mutating handler of ResourceClaims: at CREATE it
// writes the requesting-user stamp (pkg/stamp) with Stamp.Choose's user,
// the claim's creator, overwriting whatever the claim carries, so that
// the claim is charged to who created it (the validating handler and the
// ledger read the same stamp). A claim's annotations cannot change what
// it is charged: the ledger reads its user once, when it first records
// it. It never denies a well-formed review.
type ClaimStamper struct {
	Stamp   Stamps
	Metrics *Metrics
}

var _ admission.Handler = (*ClaimStamper)(nil)

// Handle implements admission.Handler.
func (c *ClaimStamper) Handle(_ context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason := c.handle(req)
	c.Metrics.observe(webhookMutateClaims, req.Namespace, resp, reason, start)
	return resp
}

func (c *ClaimStamper) handle(req admission.Request) (admission.Response, string) {
	claim, bad := decodeClaim(req)
	if bad != nil {
		return *bad, reasonBadRequest
	}
	if req.Operation != admissionv1.Create {
		return admission.Allowed(""), reasonNotCreate
	}
	set, drop, err := stampOf(c.Stamp, req, claim.Namespace, claim.Annotations)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err), reasonBadRequest
	}
	ops := annotationOps("/metadata/annotations", claim.Annotations, set, drop)
	if len(ops) == 0 {
		return admission.Allowed(""), reasonUnchanged
	}
	return patched(ops...), reasonGPU
}
