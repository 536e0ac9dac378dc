package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/gpuusage"
)

// Validator is the validating handler. For a CREATE it recomputes the pod's
// demand (the annotation is never trusted), decides through the shared
// decision function against the namespace's usage and the reservations of
// every replica, answers 403 with the policy's messages on deny, and on an
// allowed non-dry-run CREATE answers "allowed" only once the reservation is
// written in the namespace's GPUUsage object (Reserver).
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
	Decider  Decider
	Reserver Reserver
	Metrics  *Metrics
	Log      logr.Logger
}

var _ admission.Handler = (*Validator)(nil)

// Handle implements admission.Handler.
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
	if !v.Decider.Requests(pod) {
		return admission.Allowed(""), reasonNonGPU
	}
	if resp, blocked := gate(v.Gate, pod); blocked {
		return resp, reasonNotReady
	}
	dreq := decision.Request{Pod: pod, Namespace: pod.Namespace, Operation: string(req.Operation), DryRun: isDryRun(req),
		User: decision.UserInfo{Username: req.UserInfo.Username, Groups: req.UserInfo.Groups}}
	var verdict decision.Result
	decide := func() (gpuusage.Verdict, error) {
		var err error
		if verdict, err = v.Decider.Decide(ctx, dreq); err != nil {
			return gpuusage.Verdict{}, err
		}
		return gpuusage.Verdict{Reserve: verdict.Allowed && !verdict.Effective.IsZero() && !dreq.DryRun, Demand: verdict.Effective,
			Wait: verdict.FitsWithoutUnconfirmed}, nil
	}
	if err := v.Reserver.Admit(ctx, pod.Namespace, reservationKey(pod, req), pod.Name, decide); err != nil {
		v.Log.Error(err, "admission decision failed", "pod", podRef(pod))
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: no decision for pod %s: %w", podRef(pod), err)), reasonError
	}
	if !verdict.Allowed {
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
