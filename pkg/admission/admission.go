package admission

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// EffectiveAnnotation is the annotation the mutating handler writes: the
// pod's effective demand in MiB, e.g. {"gpu":1,"gpumem":20480,"gpucores":0}.
// Nothing trusts it: the validating handler recomputes.
const EffectiveAnnotation = "gpuadmit.io/effective"

// GPUPods tells GPU pods from the others (*decision.Decider).
type GPUPods interface {
	// Requests reports whether the pod names a managed resource (a GPU pod).
	Requests(pod *corev1.Pod) bool
}

// Reserver decides a GPU pod's admission and, when the decision allows it
// with a demand (not a dry run), shares the reservation with the other
// replicas through the API server before it returns (*admitqueue.Store).
// uid is the key the reservation is held under. It decides the reviews of
// one namespace one at a time, in order, and returns an error when ctx
// ends first, the decision fails, or the reservation is refused. A dry run
// gets the result a create would get, with nothing committed.
type Reserver interface {
	Admit(ctx context.Context, uid types.UID, req decision.Request) (decision.Result, error)
}

// Gate says why no decision may be made yet (nil when one may): the watches
// have not synced, no policy set is active, or the watches are stale and
// the server is configured to refuse then. Both handlers refuse every
// review with a 500 naming the reason until it clears, so a webhook reached
// by URL, or through an endpoint not yet removed, fails closed.
type Gate interface {
	Blocked() error
	// Stale describes the stale watches ("" when fresh); while it is not
	// empty, allowed responses carry it as a warning.
	Stale() string
}

// Demander computes a pod's effective demand for the mutating handler the
// way the decision computes it (*decision.Decider); nil for a pod that
// requests no managed resource.
type Demander interface {
	Demand(ctx context.Context, pod *corev1.Pod) (effective.Demands, error)
}

// maxContainers bounds the containers of a pod the handlers look at; the API
// server's own validation limits a pod far below the request size limit, so
// anything larger is hostile.
const maxContainers = 1000

// decodePod reads the Pod of req. A request that is not about a v1 Pod, or
// whose object is missing or unreadable, yields a 400 response naming what
// is wrong.
func decodePod(req admission.Request) (*corev1.Pod, *admission.Response) {
	bad := func(format string, args ...any) (*corev1.Pod, *admission.Response) {
		r := admission.Errored(http.StatusBadRequest, fmt.Errorf("gpuadmit: "+format, args...))
		return nil, &r
	}
	if k := req.Kind; k.Group != "" || k.Version != "v1" || k.Kind != "Pod" {
		return bad("expected a v1 Pod, got kind %q (group %q, version %q)", k.Kind, k.Group, k.Version)
	}
	if req.SubResource != "" {
		return bad("expected the pod itself, got subresource %q", req.SubResource)
	}
	pod, decoded := req.Object.Object.(*corev1.Pod) // decoded with the review (PodReviews)
	switch {
	case decoded && len(req.Object.Raw) == 0:
	case len(req.Object.Raw) == 0:
		return bad("the AdmissionReview carries no pod object (operation %s)", req.Operation)
	default:
		pod = &corev1.Pod{}
		if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
			return bad("decoding the pod: %v", err)
		}
	}
	if n := len(pod.Spec.InitContainers) + len(pod.Spec.Containers); n > maxContainers {
		return bad("the pod has %d containers, more than the %d gpuadmit accepts", n, maxContainers)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if pod.Name == "" {
		pod.Name = req.Name
	}
	return pod, nil
}

// podRef names the pod of a request for messages: namespace/name, or
// namespace/generateName* before the name is generated.
func podRef(pod *corev1.Pod) string {
	switch {
	case pod.Name != "":
		return pod.Namespace + "/" + pod.Name
	case pod.GenerateName != "":
		return pod.Namespace + "/" + pod.GenerateName + "*"
	}
	return pod.Namespace + "/(unnamed)"
}

// reservationKey is the key a reservation is held under: the pod's UID,
// which the API server sets before validating admission of a CREATE. When
// the object has none (a hand-made review), namespace/name, or
// namespace/generateName*requestUID, keeps distinct requests apart; the
// watch never records such a reservation, and the read that confirms
// absence ends it (a pod by that name has another UID, or there is none).
func reservationKey(pod *corev1.Pod, req admission.Request) types.UID {
	if pod.UID != "" {
		return pod.UID
	}
	if pod.Name != "" {
		return types.UID(pod.Namespace + "/" + pod.Name)
	}
	return types.UID(podRef(pod) + string(req.UID))
}

func isDryRun(req admission.Request) bool { return req.DryRun != nil && *req.DryRun }
