package admission

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// Claims governs tells claims of governed DeviceClasses from the others
// (*decision.Decider).
type Claims interface {
	GovernsClaim(c *resourcev1.ResourceClaim) bool
}

// ClaimValidator is the validating handler of ResourceClaims. A CREATE of
// a claim that asks for a device of a governed DeviceClass (HAMi-DRA's
// webhook creates one while it mutates a GPU pod; the claim controller one
// per resourceClaimTemplateName of a pod) is decided and reserved as a
// pod's is, against the same limits: a claim is charged from its admission
// until it is deleted. Any other review is allowed.
type ClaimValidator struct {
	Gate     Gate
	Claims   Claims
	Reserver Reserver
	Metrics  *Metrics
	// Events records each denial (not of a dry run) as a Warning Event;
	// nil: none.
	Events Recorder
	// Users says who a claim is charged to (Request.ChargedUser), read on
	// the reviewed claim, which the mutating handler stamped with its
	// creator; nil: the review's user.
	Users ClaimUsers
}

// ClaimUsers says who a claim is charged to (*stamp.Stamper).
type ClaimUsers interface {
	ClaimUserOf(claim *resourcev1.ResourceClaim) string
}

var _ admission.Handler = (*ClaimValidator)(nil)

// Handle implements admission.Handler.
func (v *ClaimValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason := v.handle(ctx, req)
	v.Metrics.observe(webhookValidateClaims, req.Namespace, resp, reason, start)
	return resp
}

func (v *ClaimValidator) handle(ctx context.Context, req admission.Request) (admission.Response, string) {
	claim, bad := decodeClaim(req)
	if bad != nil {
		return *bad, reasonBadRequest
	}
	if req.Operation != admissionv1.Create {
		return admission.Allowed(""), reasonNotCreate
	}
	if !v.Claims.GovernsClaim(claim) {
		return admission.Allowed(""), reasonNonGPU
	}
	s := subject{kind: "ResourceClaim", ref: claim.Namespace + "/" + claim.Name, obj: klog.KObj(claim), meta: claim}
	if resp, blocked := gate(v.Gate, s); blocked {
		return resp, reasonNotReady
	}
	dreq := decision.Request{Claim: claim, Namespace: claim.Namespace, Operation: string(req.Operation), DryRun: isDryRun(req),
		User:        decision.UserInfo{Username: req.UserInfo.Username, Groups: req.UserInfo.Groups},
		ChargedUser: req.UserInfo.Username} // without Users: charged to who created it
	if v.Users != nil {
		dreq.ChargedUser = v.Users.ClaimUserOf(claim) // the stamp the mutating handler wrote, as the ledger reads it
	}
	resp, reason := answer(ctx, v.Reserver, v.Gate, v.Events, claimKey(claim, req), dreq, s)
	if reason == reasonGPU {
		v.Metrics.reserved()
	}
	return resp, reason
}

// decodeClaim reads the ResourceClaim of req, or says what is wrong (400).
func decodeClaim(req admission.Request) (*resourcev1.ResourceClaim, *admission.Response) {
	bad := func(format string, args ...any) (*resourcev1.ResourceClaim, *admission.Response) {
		r := admission.Errored(http.StatusBadRequest, fmt.Errorf("gpuadmit: "+format, args...))
		return nil, &r
	}
	if k := req.Kind; k.Group != resourcev1.GroupName || k.Version != "v1" || k.Kind != "ResourceClaim" {
		return bad("expected a resource.k8s.io/v1 ResourceClaim, got kind %q (group %q, version %q)", k.Kind, k.Group, k.Version)
	}
	if req.SubResource != "" {
		return bad("expected the claim itself, got subresource %q", req.SubResource)
	}
	if len(req.Object.Raw) == 0 {
		return bad("the AdmissionReview carries no ResourceClaim object (operation %s)", req.Operation)
	}
	c := &resourcev1.ResourceClaim{}
	if err := json.Unmarshal(req.Object.Raw, c); err != nil {
		return bad("decoding the ResourceClaim: %v", err)
	}
	if n := len(c.Spec.Devices.Requests); n > maxContainers {
		return bad("the ResourceClaim has %d requests, more than the %d gpuadmit accepts", n, maxContainers)
	}
	if c.Namespace == "" {
		c.Namespace = req.Namespace
	}
	if c.Name == "" {
		c.Name = req.Name
	}
	return c, nil
}

// claimKey is the key a claim's reservation is held under: its UID (set
// before validating admission), else namespace/resourceclaim/name (a
// hand-made review), as reservationKey for pods.
func claimKey(c *resourcev1.ResourceClaim, req admission.Request) types.UID {
	if c.UID != "" {
		return c.UID
	}
	return types.UID(c.Namespace + "/resourceclaim/" + c.Name + "/" + string(req.UID))
}
