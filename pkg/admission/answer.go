package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// subject is what a validating review creates, for its messages and log
// lines: a pod or a ResourceClaim.
type subject struct {
	// kind is the word messages use ("pod", "ResourceClaim") and, lower
	// case, the log key.
	kind string
	// ref is namespace/name (podRef for a pod).
	ref string
	obj klog.ObjectRef
	// meta is the pod's or claim's: its controller is the object of the
	// denial's Event (events.go).
	meta metav1.Object
}

func (s subject) String() string { return s.kind + " " + s.ref }

// keyValues names the subject in a log line ("pod" or "resourceclaim").
func (s subject) keyValues() []any { return []any{strings.ToLower(s.kind), s.obj} }

// gate refuses every review with a 500 naming what is not ready while g
// is blocked: a decision on a ledger that under-counts could over-admit.
func gate(g Gate, s subject) (admission.Response, bool) {
	if g == nil {
		return admission.Response{}, false
	}
	if err := g.Blocked(); err != nil {
		return admission.Errored(http.StatusInternalServerError,
			fmt.Errorf("gpuadmit is not ready to decide on %s, so it is refused rather than admitted unchecked: %w", s, err)), true
	}
	return admission.Response{}, false
}

// answer hands dreq to r under key and answers the review: 500 when no
// decision could be made, 403 with the policies' messages (logged once,
// and recorded as an Event through rec unless it is a dry run),
// else allowed with the warnings (and the gate's staleness), with the
// reason its metrics count.
func answer(ctx context.Context, r Reserver, g Gate, rec Recorder, key types.UID, dreq decision.Request, s subject) (admission.Response, string) {
	log := logf.FromContext(ctx)
	verdict, err := r.Admit(ctx, key, dreq)
	if err != nil {
		log.Error(err, "no admission decision", s.keyValues()...)
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: no decision for %s: %w", s, err)), reasonError
	}
	if !verdict.Allowed {
		logDenial(log, s, verdict)
		msg := strings.Join(verdict.Denials, "; ")
		if msg == "" {
			msg = "denied by the GPU admission policy (no message given)"
		}
		recordDenial(ctx, rec, s, dreq.DryRun, verdict, msg)
		return admission.Denied(msg).WithWarnings(verdict.Warnings...), denialReason(verdict)
	}
	resp := admission.Allowed("").WithWarnings(verdict.Warnings...)
	if g != nil {
		if stale := g.Stale(); stale != "" {
			resp = resp.WithWarnings("gpuadmit: a watch is stale, so usage may be over-counted until it recovers; what is admitted meanwhile stays reserved: " + stale)
		}
	}
	switch {
	case verdict.Effective.IsZero():
		return resp, reasonNonGPU
	case dreq.DryRun:
		return resp, reasonDryRun
	}
	return resp, reasonGPU
}

// logDenial logs one line for a denial: the first limit the demand would
// pass (resource, need, used, reserved, limit, quota), and the policies'
// messages.
func logDenial(log logr.Logger, s subject, res decision.Result) {
	kv := append(s.keyValues(), "denials", res.Denials)
	if len(res.Exceeded) > 0 {
		x := res.Exceeded[0]
		kv = append(kv, "resource", x.Resource, "need", x.Pod, "used", x.Used, "reserved", x.Reserved, "limit", x.Limit, "quota", x.Quota)
	}
	log.Info(strings.ToLower(s.kind)+" denied", kv...)
}
