package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	effectivecmd "github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/effective"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// A live eval decides locally only with everything the webhook reads: the
// nodes (whole-card and percentage pods resolve against their devices),
// every namespace's pods, the namespace, the GPUReservationSet, who the
// user is, and gpuadmit's configuration and policies. A namespace user
// (the built-in edit role) may read none of the cluster-scoped ones; a
// verdict computed without them is not the webhook's (a whole-card pod is
// denied as unresolved, the policies run with the defaults). Then the
// webhook itself decides: each pod is created with dryRun=All, which
// runs admission, gpuadmit's webhooks included, with the webhook's own
// state, and stores, reserves and records nothing (the webhooks'
// sideEffects: NoneOnDryRun). The user needs create on pods (and
// ResourceClaims) in the namespace, which edit has; without it, eval is an
// error naming what it was refused, never a verdict with missing inputs.

// Decided by: the lines that say which source decided.
const (
	decidedLocally   = "decided locally"
	decidedByWebhook = "decided by the webhook (server dry run)"
)

// dryRunner is the live source's server-side dry run.
type dryRunner interface {
	// Forbidden names the reads of the cluster the user was refused.
	Forbidden() []string
	DryRunPod(ctx context.Context, pod *corev1.Pod) (source.Verdict, error)
	DryRunClaim(ctx context.Context, claim *resourcev1.ResourceClaim) (source.Verdict, error)
	// DryRunWorkload dry-runs a built-in workload's create: the verdict on
	// it as a whole.
	DryRunWorkload(ctx context.Context, apiVersion, kind, ns string, raw []byte) (source.Verdict, error)
}

// webhookDecides returns the dry runner and what the local decision would
// go without, when the webhook is to decide: reading the live cluster, a
// read refused, and neither --config nor --policy given (with them, the
// user asks what that setup would decide: decided locally, with a
// warning naming what is left out).
func (e *Evaluation) webhookDecides() (dryRunner, []string) {
	r, ok := e.Source.(dryRunner)
	if !ok {
		return nil, nil
	}
	missing := append(r.Forbidden(), e.Setup.Forbidden()...)
	if len(missing) == 0 {
		return nil, nil
	}
	if e.Setup.Given() {
		e.Warn(fmt.Sprintf("decided locally with --config/--policy, without what you may not read (%s): not necessarily the webhook's verdict",
			strings.Join(missing, ", ")))
		return nil, nil
	}
	return r, missing
}

// byWebhook decides every object of objs by a server dry run of its
// create (a workload's: of a pod made from its template, in its
// namespace, under a generated name).
func (e *Evaluation) byWebhook(ctx context.Context, objs *manifest.Objects, r dryRunner, missing []string) (Objects, error) {
	out := Objects{Allowed: true, primary: e.decider.Families()[0].Name,
		decidedBy: decidedByWebhook + ", as you may not " + strings.Join(missing, ", ")}
	if len(objs.Workloads) > 1 {
		e.Warn("a server dry run reserves nothing, so each object is decided alone, not counting the ones before it")
	}
	if e.explain {
		e.Warn("--explain is not available from a server dry run: the webhook answers with its messages alone")
	}
	for _, w := range objs.Workloads {
		o, err := e.dryRunObject(ctx, w, r)
		var forbidden *source.DryRunForbiddenError
		if errors.As(err, &forbidden) {
			return Objects{}, fmt.Errorf("cannot decide as the webhook does: you may not %s, which the webhook reads, and %w; "+
				"ask for those rights (the gpuadmit chart's rbac.tenantReadAccess grants reading its configuration and policies), or decide offline with --state",
				strings.Join(missing, ", "), err)
		}
		if err != nil {
			return Objects{}, fmt.Errorf("%s %q: %w", w.Kind, w.Name, err)
		}
		out.Allowed = out.Allowed && o.Allowed
		out.Objects = append(out.Objects, o)
	}
	return out, nil
}

// dryRunObject decides one object by a server dry run: a pod (one of a
// workload's: the others are not decided, and a warning says so), or a
// ResourceClaim.
func (e *Evaluation) dryRunObject(ctx context.Context, w *manifest.Workload, r dryRunner) (evalObject, error) {
	o := evalObject{ObjectRef: effectivecmd.RefOf(w), evaluatedIn: e.namespaceOf(w.Namespace)}
	var v source.Verdict
	var err error
	var notConsulted []string
	if w.Claim != nil {
		c := w.Claim.DeepCopy()
		c.Namespace = o.evaluatedIn
		v, err = r.DryRunClaim(ctx, c)
	} else {
		pod := w.Pod.DeepCopy()
		pod.Namespace = o.evaluatedIn
		if v, err = r.DryRunPod(ctx, pod); err == nil {
			notConsulted, err = e.notConsulted(ctx, pod) // the API server answered without gpuadmit
		}
	}
	if err != nil {
		return o, err
	}
	o.Allowed, o.Denials = v.Allowed, v.Denials
	o.Warnings = append(slices.Clone(v.Warnings), notConsulted...)
	if err := e.dryRunWhole(ctx, w, r, &o); err != nil {
		return o, err
	}
	if o.Effective, o.Families, err = annotated(v.Effective); err != nil {
		return o, err
	}
	if v.Allowed {
		o.Admitted = 1
		if o.Replicas == manifest.PerNode || o.Replicas > 1 {
			o.Warnings = append(o.Warnings, fmt.Sprintf("a server dry run decides one pod: the other pods of %s %q are not decided (a dry run reserves nothing, so each would be decided alone)",
				w.Kind, w.Name))
		}
	}
	if o.Denials == nil {
		o.Denials = []string{}
	}
	if o.Warnings == nil {
		o.Warnings = []string{}
	}
	return o, nil
}

// dryRunWhole adds the dry run of a built-in workload's own create (the
// workloads webhook's verdict on it as a whole) to o: its denials first,
// then its warnings. A user who may not create the workload is warned, not
// failed: its pod was decided.
func (e *Evaluation) dryRunWhole(ctx context.Context, w *manifest.Workload, r dryRunner, o *evalObject) error {
	if len(w.Object) == 0 || w.Replicas == manifest.PerNode || (w.APIVersion != "apps/v1" && w.APIVersion != "batch/v1") {
		return nil
	}
	v, err := r.DryRunWorkload(ctx, w.APIVersion, w.Kind, o.evaluatedIn, w.Object)
	var forbidden *source.DryRunForbiddenError
	if errors.As(err, &forbidden) {
		e.Warn(fmt.Sprintf("%s %q is not checked as a whole: %v", w.Kind, w.Name, err))
		return nil
	}
	if err != nil {
		return err
	}
	if !v.Allowed {
		o.Allowed = false
		o.Denials = append(slices.Clone(v.Denials), o.Denials...)
	}
	o.Warnings = append(slices.Clone(v.Warnings), o.Warnings...)
	return nil
}

// annotated reads the mutating webhook's gpuadmit.io/effective
// annotation: the first family's demand at the top level, the others'
// under families (zero when the webhook wrote none: a denied pod, a
// ResourceClaim).
func annotated(value string) (effective.Vector, map[string]evalFamily, error) {
	if value == "" {
		return effective.Vector{}, nil, nil
	}
	var a struct {
		effective.Vector
		Families map[string]effective.Vector `json:"families"`
	}
	if err := json.Unmarshal([]byte(value), &a); err != nil {
		return effective.Vector{}, nil, fmt.Errorf("the webhook's gpuadmit.io/effective annotation %q: %w", value, err)
	}
	var fams map[string]evalFamily
	for name, v := range a.Families {
		if fams == nil {
			fams = map[string]evalFamily{}
		}
		fams[name] = evalFamily{Effective: v}
	}
	return a.Vector, fams, nil
}
