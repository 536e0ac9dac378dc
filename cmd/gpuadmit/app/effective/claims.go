package effective

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// demander computes `gpuadmit effective`'s demands: the pods', with the
// claims of their templates among templates (the manifests'), and the
// claims'. Claims are sized against inv (the devices of the manifests'
// ResourceSlices); devMem resolves the first family's memory percentages
// and the whole devices inv does not size.
type demander struct {
	// ctx bounds the claims' CEL selectors (the command's context).
	ctx context.Context
	source.Charging
	devMem    int64
	templates []*resourcev1.ResourceClaimTemplate
	inv       *dra.Inventory
}

// effective is the effective demand of one object of the manifests.
func (d demander) effective(w *manifest.Workload) (effectiveOutput, error) {
	var ds effective.Demands
	var err error
	if w.Claim != nil {
		ds, err = d.Claims.Demands(d.ctx, w.Claim.Name, &w.Claim.Spec, w.Claim.Status.Allocation, d.inv, d.options())
	} else {
		ds, err = d.pod(w)
	}
	if err != nil {
		return effectiveOutput{}, err
	}
	return effectiveReport(ds, d.Families[0].Name), nil
}

// pod is the demand of one pod of w: its containers', then the claims of
// its templates that the manifests hold, as the webhook adds those the
// cluster holds.
func (d demander) pod(w *manifest.Workload) (effective.Demands, error) {
	ds, err := podDemands(w, d.Families, d.devMem)
	if err != nil {
		return nil, err
	}
	for _, rc := range w.Pod.Spec.ResourceClaims {
		t := d.template(w.Pod.Namespace, rc.ResourceClaimTemplateName)
		if t == nil {
			continue
		}
		td, err := d.Claims.Demands(d.ctx, w.Pod.Name+"/"+rc.Name, &t.Spec.Spec, nil, d.inv, d.options())
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
	return map[string]effective.Options{d.Families[0].Name: {DeviceMemoryMiB: d.devMem}}
}
