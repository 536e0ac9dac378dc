package app

import (
	"context"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// ResourceClaims (resource.k8s.io/v1) are evaluated as the webhook's
// /validate-resourceclaims handler decides their CREATE: the devices of
// the governed DeviceClasses a claim asks for are its demand, against the
// same limits as the pods' extended resources. A pod's
// resourceClaimTemplateName templates add their claims to its demand.

// demander computes `gpuadmit effective`'s demands: the pods', with the
// claims of their templates among templates (the manifests'), and the
// claims'. Claims are sized against inv (the devices of the manifests'
// ResourceSlices); devMem resolves the first family's memory percentages
// and the whole devices inv does not size.
type demander struct {
	// ctx bounds the claims' CEL selectors (the command's context).
	ctx context.Context
	charging
	devMem    int64
	templates []*resourcev1.ResourceClaimTemplate
	inv       *dra.Inventory
}

// effective is the effective demand of one object of the manifests.
func (d demander) effective(w *manifest.Workload) (effectiveOutput, error) {
	var ds effective.Demands
	var err error
	if w.Claim != nil {
		ds, err = d.claims.Demands(d.ctx, w.Claim.Name, &w.Claim.Spec, w.Claim.Status.Allocation, d.inv, d.options())
	} else {
		ds, err = d.pod(w)
	}
	if err != nil {
		return effectiveOutput{}, err
	}
	return effectiveReport(ds, d.families[0].Name), nil
}

// pod is the demand of one pod of w: its containers', then the claims of
// its templates that the manifests hold, as the webhook adds those the
// cluster holds.
func (d demander) pod(w *manifest.Workload) (effective.Demands, error) {
	ds, err := podDemands(w, d.families, d.devMem)
	if err != nil {
		return nil, err
	}
	for _, rc := range w.Pod.Spec.ResourceClaims {
		t := d.template(w.Pod.Namespace, rc.ResourceClaimTemplateName)
		if t == nil {
			continue
		}
		td, err := d.claims.Demands(d.ctx, w.Pod.Name+"/"+rc.Name, &t.Spec.Spec, nil, d.inv, d.options())
		if err != nil {
			return nil, fmt.Errorf("ResourceClaimTemplate %q: %w", t.Name, err)
		}
		var ok bool
		if ds, ok = ds.With(td); !ok {
			return nil, fmt.Errorf("ResourceClaimTemplate %q: the pod's and its claims' GPU requests do not fit in a 64-bit integer", t.Name)
		}
	}
	return ds, nil
}

// template is the manifests' ResourceClaimTemplate name of namespace ns
// (nil when name is nil or there is none).
func (d demander) template(ns string, name *string) *resourcev1.ResourceClaimTemplate {
	if name == nil {
		return nil
	}
	for _, t := range d.templates {
		if t.Namespace == ns && t.Name == *name {
			return t
		}
	}
	return nil
}

// options are the device sizes claims resolve against: --device-memory
// for the first family.
func (d demander) options() map[string]effective.Options {
	return map[string]effective.Options{d.families[0].Name: {DeviceMemoryMiB: d.devMem}}
}

// claim decides the CREATE of w's ResourceClaim in its namespace, as the
// webhook decides it, and records it in the ledger when admitted (the
// watch would record it) before the next object is decided.
func (e *evaluation) claim(ctx context.Context, w *manifest.Workload) (evalObject, error) {
	o := evalObject{objectRef: refOf(w), evaluatedIn: e.namespaceOf(w.Namespace)}
	c := w.Claim.DeepCopy()
	// The API server creates a claim without status, under a UID of its own.
	c.Namespace, c.Status = o.evaluatedIn, resourcev1.ResourceClaimStatus{}
	c.UID = types.UID(fmt.Sprintf("gpuadmit-eval/ResourceClaim/%s/%s", c.Namespace, c.Name))
	res, err := e.decider.Decide(ctx, decision.Request{Claim: c, Namespace: c.Namespace, Operation: "CREATE", User: *e.user,
		Explain: e.explain, Reservations: e.reserved[c.Namespace]})
	if err != nil {
		return o, err
	}
	o.Allowed, o.Explanation, o.Denials, o.Warnings = res.Allowed, res.Explanation, res.Denials, res.Warnings
	o.Effective, o.Families = evalEffective(res.Effective, e.decider.Families()[0].Name)
	if !e.decider.GovernsClaim(c) {
		o.Warnings = append(o.Warnings, e.notGoverned(c))
	}
	if res.Allowed {
		o.Admitted = 1
		o.Denials = nil
		e.ledger.UpsertClaim(c)
	}
	if o.Denials == nil {
		o.Denials = []string{}
	}
	if o.Warnings == nil {
		o.Warnings = []string{}
	}
	return o, nil
}

// notGoverned says that a claim of no governed DeviceClass is neither
// decided nor charged.
func (e *evaluation) notGoverned(c *resourcev1.ResourceClaim) string {
	var names []string
	for _, cl := range e.decider.Charger().Classes() {
		names = append(names, cl.Name)
	}
	governed := "the configuration governs none"
	if len(names) > 0 {
		governed = "the configuration governs " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("ResourceClaim %q asks for no device of a DeviceClass gpuadmit governs (%s): the webhook admits it without deciding, and it is not charged",
		c.Name, governed)
}
