package admission

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// Validator is the validating handler. For a CREATE it recomputes the pod's
// demand (the annotation is never trusted), decides through the shared
// decision function, answers 403 with the policy's messages on deny, and on
// an allowed non-dry-run CREATE reserves the demand under the pod's UID.
//
// Decide and Reserve run under a per-namespace lock, so two concurrent
// creates in one namespace never both see the last free MiB: the second
// sees the first one's reservation.
//
// Before the Gate opens (the watches synced and a policy set is active),
// every CREATE is refused with a 500 naming what is not ready: a decision
// on a ledger that under-counts could over-admit.
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

	locks stripedLocks
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
	dry := isDryRun(req)
	if !dry {
		unlock := v.locks.lock(pod.Namespace)
		defer unlock()
	}
	verdict, err := v.Decider.Decide(ctx, decision.Request{Pod: pod, Namespace: pod.Namespace,
		Operation: string(req.Operation), DryRun: dry})
	if err != nil {
		v.Log.Error(err, "admission decision failed", "pod", podRef(pod))
		return admission.Errored(http.StatusInternalServerError,
			fmt.Errorf("gpuadmit: no decision for pod %s: %w", podRef(pod), err)), reasonError
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
	case dry:
		return resp, reasonDryRun
	}
	key := reservationKey(pod, req)
	if err := v.Reserver.Reserve(key, pod.Namespace, pod.Name, verdict.Effective); err != nil {
		v.Log.Error(err, "reserving admitted demand", "pod", podRef(pod))
		return admission.Errored(http.StatusInternalServerError,
			fmt.Errorf("gpuadmit: reserving the demand of pod %s: %w", podRef(pod), err)), reasonError
	}
	v.Metrics.reserved()
	return resp, reasonGPU
}

// stripedLocks serialises decisions per namespace with a fixed set of
// mutexes (namespaces hash onto them; no map that grows with namespaces).
type stripedLocks [64]sync.Mutex

func (s *stripedLocks) lock(namespace string) (unlock func()) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	m := &s[h.Sum32()%uint32(len(s))]
	m.Lock()
	return m.Unlock
}
