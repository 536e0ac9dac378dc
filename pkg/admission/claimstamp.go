package admission

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// ClaimStamper is the mutating handler of ResourceClaims. At CREATE it
// writes the requesting-user stamp (pkg/stamp), overwriting whatever the
// claim carries: a claim the claim controller makes from a pod's
// ResourceClaimTemplate (its controller ownerReference a Pod) is stamped
// with the user that pod is charged to, read from the API (same name and
// UID), so that template claims count against their pod's user; any other
// claim with Stamp.Choose's user, its creator. At UPDATE the old claim's
// stamp is restored verbatim, so the stamp a replica reads never changes
// after CREATE. The validating handler and the ledger read the same stamp.
type ClaimStamper struct {
	Stamp ClaimStamps
	// Pods reads a template claim's pod; nil: such a claim is stamped
	// with its creator.
	Pods    PodReader
	Metrics *Metrics
}

// ClaimStamps stamps claims (*stamp.Stamper).
type ClaimStamps interface {
	Stamps
	// ClaimCreator reports whether username is the claim controller.
	ClaimCreator(username string) bool
	// UserOf returns who pod is charged to.
	UserOf(pod *corev1.Pod) string
}

// PodReader reads a pod from the API server.
type PodReader interface {
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

var _ admission.Handler = (*ClaimStamper)(nil)

// Handle implements admission.Handler.
func (c *ClaimStamper) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason := c.handle(ctx, req)
	c.Metrics.observe(webhookMutateClaims, req.Namespace, resp, reason, start)
	return resp
}

func (c *ClaimStamper) handle(ctx context.Context, req admission.Request) (admission.Response, string) {
	claim, bad := decodeClaim(req)
	if bad != nil {
		return *bad, reasonBadRequest
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed(""), reasonNotCreate
	}
	if c.Stamp == nil {
		return admission.Allowed(""), reasonUnchanged
	}
	owner := metav1.GetControllerOfNoCopy(claim)
	var set map[string]string
	var drop []string
	var err error
	if req.Operation == admissionv1.Create && c.templateClaim(req, owner) {
		var user string
		if user, err = c.podUser(ctx, claim, owner); err != nil {
			return admission.Errored(http.StatusServiceUnavailable, err), reasonError
		}
		set = c.Stamp.Stamp(claim.Namespace, user)
	} else if set, drop, err = stampOf(c.Stamp, req, claim.Namespace, owner, claim.Annotations); err != nil {
		return admission.Errored(http.StatusBadRequest, err), reasonBadRequest
	}
	ops := annotationOps("/metadata/annotations", claim.Annotations, set, drop)
	if len(ops) == 0 {
		return admission.Allowed(""), reasonUnchanged
	}
	return patched(ops...), reasonGPU
}

// templateClaim reports whether the claim of req is made by the claim
// controller for the pod of its controller ownerReference.
func (c *ClaimStamper) templateClaim(req admission.Request, owner *metav1.OwnerReference) bool {
	return c.Pods != nil && owner != nil && owner.APIVersion == "v1" && owner.Kind == "Pod" &&
		c.Stamp.ClaimCreator(req.UserInfo.Username)
}

// podUser is the user of the pod that owns claim (its UID must match).
func (c *ClaimStamper) podUser(ctx context.Context, claim *resourcev1.ResourceClaim, owner *metav1.OwnerReference) (string, error) {
	pod, err := c.Pods.Pod(ctx, claim.Namespace, owner.Name)
	if err != nil {
		return "", fmt.Errorf("gpuadmit: reading pod %s/%s, which owns claim %s: %w", claim.Namespace, owner.Name, claim.Name, err)
	}
	if pod.UID != owner.UID {
		return "", fmt.Errorf("gpuadmit: pod %s/%s has UID %s, claim %s names its owner %s", claim.Namespace, owner.Name, pod.UID, claim.Name, owner.UID)
	}
	return c.Stamp.UserOf(pod), nil
}
