package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// Validator is the validating handler. For a CREATE of a GPU pod it hands
// the review to the Reserver, which recomputes the pod's demand (the
// annotation is never trusted), decides through the shared decision
// function against the namespace's usage and the reservations of every
// replica, and on an allowed non-dry-run CREATE returns only once the
// reservation is written in the namespace's GPUUsage object; it answers 403
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
}

var _ admission.Handler = (*Validator)(nil)

// Handle implements admission.Handler. It logs with the request's logger
// (controller-runtime puts it in ctx): every denial at the default
// verbosity, once.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason := v.handle(ctx, req)
	v.Metrics.observe(webhookValidate, resp, reason, start)
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
	if !v.GPUPods.Requests(pod) {
		return admission.Allowed(""), reasonNonGPU
	}
	if resp, blocked := gate(v.Gate, pod); blocked {
		return resp, reasonNotReady
	}
	dreq := decision.Request{Pod: pod, Namespace: pod.Namespace, Operation: string(req.Operation), DryRun: isDryRun(req),
		User: decision.UserInfo{Username: req.UserInfo.Username, Groups: req.UserInfo.Groups}}
	log := logf.FromContext(ctx)
	verdict, err := v.Reserver.Admit(ctx, reservationKey(pod, req), dreq)
	if err != nil {
		log.Error(err, "no admission decision", "pod", klog.KObj(pod))
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: no decision for pod %s: %w", podRef(pod), err)), reasonError
	}
	if !verdict.Allowed {
		logDenial(log, pod, verdict)
		msg := strings.Join(verdict.Denials, "; ")
		if msg == "" {
			msg = "denied by the GPU admission policy (no message given)"
		}
		return admission.Denied(msg).WithWarnings(verdict.Warnings...), reasonPolicy
	}
	resp := admission.Allowed("").WithWarnings(verdict.Warnings...)
	if v.Gate != nil {
		if stale := v.Gate.Stale(); stale != "" {
			resp = resp.WithWarnings("gpuadmit: a watch is stale, so usage may be over-counted until it recovers; pods admitted meanwhile stay reserved: " + stale)
		}
	}
	switch {
	case verdict.Effective.IsZero():
		return resp, reasonNonGPU
	case dreq.DryRun:
		return resp, reasonDryRun
	}
	v.Metrics.reserved()
	return resp, reasonGPU
}

// logDenial logs one line for a denied pod: the first limit its demand
// would pass (resource, need, used, reserved, limit, quota), and the
// policies' messages.
func logDenial(log logr.Logger, pod *corev1.Pod, res decision.Result) {
	kv := []any{"pod", klog.KObj(pod), "denials", res.Denials}
	if len(res.Exceeded) > 0 {
		x := res.Exceeded[0]
		kv = append(kv, "resource", x.Resource, "need", x.Pod, "used", x.Used, "reserved", x.Reserved, "limit", x.Limit, "quota", x.Quota)
	}
	log.Info("pod denied", kv...)
}
