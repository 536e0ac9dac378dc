package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
	"github.com/gpuadmit/gpuadmit/pkg/workloadcheck"
)

// WorkloadChecker decides a workload as a whole (*workloadcheck.Checker).
type WorkloadChecker interface {
	Check(ctx context.Context, req workloadcheck.Request) (workloadcheck.Verdict, error)
}

// WorkloadReader reads a workload object (a scale review carries only the
// new replica count: the template is the object's).
type WorkloadReader interface {
	Read(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error)
}

// OwnPods says what a workload's existing pods are charged (counted as
// already used when its headroom is compared).
type OwnPods interface {
	Own(namespace, kind, name string) effective.Usage
}

// PendingReservations are a namespace's reservations not recorded yet.
type PendingReservations interface {
	Pending(ctx context.Context, namespace string) ([]reservation.Reservation, error)
}

// WorkloadValidator is the validating handler of workloads: CREATE and
// UPDATE of the kinds Kinds knows, and their scale subresource. It reads
// the object's pod sets (pkg/workload) and answers with the workload
// check's verdict (pkg/workloadcheck): denied past a hard limit (or warned
// under workloads.enforcement Warn), warned when pods will wait or a
// rollout will stall. It never reserves. A workload whose templates name no
// managed resource is allowed undecided. An UPDATE or scale that only
// shrinks the workload (no more pods, the same templates) is allowed before
// anything else, even while the gate is closed; a scale whose workload
// cannot be read is denied with the reason.
type WorkloadValidator struct {
	Gate Gate
	// GPUPods tells the pod templates that name a managed resource: a
	// workload none of whose templates does is allowed undecided.
	GPUPods GPUPods
	Kinds   *workload.Kinds
	Checker WorkloadChecker
	Reader  WorkloadReader
	// Own and Pending may be nil: no own pods, no reservations counted.
	Own     OwnPods
	Pending PendingReservations
	Metrics *Metrics
}

var _ admission.Handler = (*WorkloadValidator)(nil)

// Handle implements admission.Handler.
func (v *WorkloadValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason, kind := v.handle(ctx, req)
	v.Metrics.observe(webhookValidateWorkloads, req.Namespace, resp, reason, start)
	v.Metrics.workload(kind, resp)
	return resp
}

// applied is a workload review read: the kind, the object (after the
// change) and the one before, decoded.
type applied struct {
	kind     *workload.Kind
	obj, old map[string]any
	name     string
}

func (v *WorkloadValidator) handle(ctx context.Context, req admission.Request) (admission.Response, string, string) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed(""), reasonNotCreate, ""
	}
	a, resp, reason := v.read(ctx, req)
	if a == nil {
		return resp, reason, ""
	}
	kind := a.kind.Kind
	sets, err := a.kind.PodSets(a.obj)
	if err != nil {
		return denyWorkload(fmt.Errorf("gpuadmit: %s %s/%s: %w", kind, req.Namespace, a.name, err)), reasonInvalid, kind
	}
	var oldSets []workload.PodSet
	if a.old != nil {
		if oldSets, err = a.kind.PodSets(a.old); err != nil {
			oldSets = nil // an unreadable old object: the new one is checked in full
		}
	}
	if a.old != nil && oldSets != nil && sameOrFewer(sets, oldSets) {
		return admission.Allowed(""), reasonUnchanged, kind
	}
	if !v.governed(sets) {
		return admission.Allowed(""), reasonNonGPU, kind
	}
	s := subject{kind: kind, ref: req.Namespace + "/" + a.name, obj: klog.KRef(req.Namespace, a.name)}
	if resp, blocked := gate(v.Gate, s); blocked {
		return resp, reasonNotReady, kind
	}
	wreq, err := v.request(ctx, req, a, sets, oldSets)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: no decision for %s: %w", s, err)), reasonError, kind
	}
	verdict, err := v.Checker.Check(ctx, wreq)
	if err != nil {
		logf.FromContext(ctx).Error(err, "no workload decision", s.keyValues()...)
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: no decision for %s: %w", s, err)), reasonError, kind
	}
	if !verdict.Allowed {
		logf.FromContext(ctx).Info("workload denied", append(s.keyValues(), "denials", verdict.Denials)...)
		return admission.Denied(strings.Join(verdict.Denials, "; ")).WithWarnings(verdict.Warnings...), reasonQuota, kind
	}
	return v.allowed(verdict), reasonGPU, kind
}

// allowed answers an allowed verdict with its warnings and the gate's
// staleness.
func (v *WorkloadValidator) allowed(verdict workloadcheck.Verdict) admission.Response {
	resp := admission.Allowed("").WithWarnings(verdict.Warnings...)
	if v.Gate != nil {
		if stale := v.Gate.Stale(); stale != "" {
			resp = resp.WithWarnings("gpuadmit: a watch is stale, so the usage the workload was checked against may be over-counted: " + stale)
		}
	}
	return resp
}

// request builds the check of a: its pod sets, the old ones, its own
// pods' charge, a Deployment rollout's surge pods and the namespace's
// reservations.
func (v *WorkloadValidator) request(ctx context.Context, req admission.Request, a *applied, sets, oldSets []workload.PodSet) (workloadcheck.Request, error) {
	ns := req.Namespace
	w := &workloadcheck.Workload{Kind: a.kind.Kind, Namespace: ns, Name: a.name, Sets: sets}
	out := workloadcheck.Request{New: w}
	if oldSets != nil {
		out.Old = &workloadcheck.Workload{Kind: a.kind.Kind, Namespace: ns, Name: a.name, Sets: oldSets}
	}
	if v.Own != nil {
		out.Own = v.Own.Own(ns, a.kind.Kind, a.name)
	}
	if len(sets) > 0 {
		surge, err := workloadcheck.Surge(a.kind.Kind, a.old, a.obj, sets[0].Count)
		if err != nil {
			return out, err
		}
		out.Surge = surge
	}
	if v.Pending != nil {
		p, err := v.Pending.Pending(ctx, ns)
		if err != nil {
			return out, fmt.Errorf("reading the namespace's reservations: %w", err)
		}
		out.Pending = p
	}
	return out, nil
}

// governed reports whether a pod template of sets names a managed resource
// (or a ResourceClaimTemplate of a governed class the ledger knows).
func (v *WorkloadValidator) governed(sets []workload.PodSet) bool {
	if v.GPUPods == nil {
		return true
	}
	for _, s := range sets {
		if v.GPUPods.Requests(s.Pod) {
			return true
		}
	}
	return false
}

// sameOrFewer reports whether every pod set of sets is one of old's with
// the same template and no more pods: a change that only shrinks (or
// leaves the pods alone), allowed without a decision.
func sameOrFewer(sets, old []workload.PodSet) bool {
	byName := map[string]workload.PodSet{}
	for _, o := range old {
		byName[o.Name] = o
	}
	for _, s := range sets {
		if s.Count == 0 {
			continue
		}
		o, ok := byName[s.Name]
		if !ok || s.Count > o.Count || string(s.Template) != string(o.Template) {
			return false
		}
	}
	return true
}

func denyWorkload(err error) admission.Response { return admission.Denied(err.Error()) }
