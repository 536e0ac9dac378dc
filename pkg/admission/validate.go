package admission

import (
	"context"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// Validator is the validating handler. For a CREATE of a GPU pod it hands
// the review to the Reserver, which recomputes the pod's demand (the
// annotation is never trusted), decides through the shared decision
// function against the namespace's usage and the reservations of every
// replica, and on an allowed non-dry-run CREATE returns only once the
// reservation is written in the namespace's GPUReservationSet (and its
// teams'); it answers 403
// with the policy's messages on deny.
//
// Within a replica, the Reserver decides the reviews of one namespace in
// order (a queue that gives up when a review's context ends, so it never
// outlives the API server's timeout); across replicas the write with the
// object's resourceVersion orders them.
//
// Before the Gate opens (the watches synced and a policy set is active),
// every GPU CREATE is refused with a 500 naming what is not ready: a
// decision on a ledger that under-counts could over-admit.
//
// UPDATE is allowed without a decision: a pod's GPU demand cannot change
// after creation (container resources are immutable; in-place resize covers
// only cpu and memory, never extended resources), and the ledger follows
// status changes through its watch. The webhook configurations send CREATE
// only; UPDATE is answered so that a configuration that adds it is harmless.
type Validator struct {
	Gate     Gate
	GPUPods  GPUPods
	Reserver Reserver
	Metrics  *Metrics
	// Events records each denial (not of a dry run) as a Warning Event;
	// nil: none.
	Events Recorder
	// Users says who a pod is charged to (Request.ChargedUser), read on
	// the reviewed pod, which the mutating handler stamped; nil: the
	// review's user.
	Users Users
}

// Users says who a pod is charged to (*stamp.Stamper): its verified
// requesting-user stamp, else its controller's service account.
type Users interface {
	UserOf(pod *corev1.Pod) string
}

var _ admission.Handler = (*Validator)(nil)

// Handle implements admission.Handler. It logs with the request's logger
// (controller-runtime puts it in ctx): every denial at the default
// verbosity, once.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason := v.handle(ctx, req)
	v.Metrics.observe(webhookValidate, req.Namespace, resp, reason, start)
	return resp
}

func (v *Validator) handle(ctx context.Context, req admission.Request) (admission.Response, string) {
	pod, bad := decodePod(req)
	if bad != nil {
		return *bad, reasonBadRequest
	}
	if req.Operation != admissionv1.Create {
		return admission.Allowed(""), reasonNotCreate
	}
	// "Is this a GPU pod?" is answered here, once, where the review is
	// decoded; what runs after trusts the answer (decision.Request).
	if !v.GPUPods.Requests(pod) {
		return admission.Allowed(""), reasonNonGPU
	}
	s := subject{kind: "pod", ref: podRef(pod), obj: klog.KObj(pod), meta: pod}
	if resp, blocked := gate(v.Gate, s); blocked {
		return resp, reasonNotReady
	}
	dreq := decision.Request{Pod: pod, Namespace: pod.Namespace, Operation: string(req.Operation), DryRun: isDryRun(req),
		User: decision.UserInfo{Username: req.UserInfo.Username, Groups: req.UserInfo.Groups}}
	if v.Users != nil {
		dreq.ChargedUser = v.Users.UserOf(pod)
	}
	resp, reason := answer(ctx, v.Reserver, v.Gate, v.Events, reservationKey(pod, req), dreq, s)
	if reason == reasonGPU {
		v.Metrics.reserved()
	}
	return resp, reason
}
