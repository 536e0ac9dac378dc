package config

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// validateDevices checks the devices section: the nvidia keys, the chips of
// the lists, each governed family's Validate, no resource name in two
// places, and effective.ValidateFamilies over them all. Errors name the
// section's key path (devices.vnpus[910B2].memoryCapacity).
func validateDevices(c *Configuration) field.ErrorList {
	errs := validateNvidia(c.Devices.Nvidia, field.NewPath("devices", "nvidia"))
	if g := c.Devices.Gpushare; g != nil && g.MemoryUnit != nil {
		if u := *g.MemoryUnit; u != configv1alpha1.MemoryUnitGiB && u != configv1alpha1.MemoryUnitMiB {
			errs = append(errs, field.NotSupported(field.NewPath("devices", "gpushare", "memoryUnit"), u,
				[]configv1alpha1.MemoryUnit{configv1alpha1.MemoryUnitGiB, configv1alpha1.MemoryUnitMiB}))
		}
	}
	gs, more := governedFamilies(c)
	errs = append(errs, more...)
	named, bad := nameErrors(gs)
	errs = append(errs, named...)
	for i, g := range gs {
		if i == 0 || bad[i] {
			continue // nvidia: validateNvidia; a family with a bad name: reported
		}
		if err := g.fam.Validate(); err != nil {
			errs = append(errs, familyError(err))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	fams := make([]effective.Family, len(gs))
	for i, g := range gs {
		fams[i] = g.fam
	}
	if err := effective.ValidateFamilies(fams); err != nil {
		for _, msg := range strings.Split(err.Error(), "\n") { // errors.Join: one a line
			errs = append(errs, field.Invalid(field.NewPath("devices"), field.OmitValueType{}, msg))
		}
	}
	return errs
}

// nameErrors: every name a family has is set, and no name is used in two
// places (within the nvidia section validateNvidia reports it); bad holds
// the families with such an error.
func nameErrors(gs []governed) (errs field.ErrorList, bad map[int]bool) {
	type where struct {
		fam  int
		path string
	}
	owner := map[corev1.ResourceName]where{}
	bad = map[int]bool{}
	for i, g := range gs {
		n := g.fam.Names
		for k, val := range [4]corev1.ResourceName{n.Count, n.Memory, n.MemoryPercentage, n.Cores} {
			p := g.path
			if g.keys[k] != "" {
				p += "." + g.keys[k]
			}
			switch o, dup := owner[val]; {
			case val == "" && g.keys[k] != "" && i > 0:
				errs, bad[i] = append(errs, field.Required(field.NewPath(p), "a resource name")), true
			case val == "":
			case dup && (o.fam != 0 || i != 0):
				errs, bad[i] = append(errs, field.Duplicate(field.NewPath(p), string(val)+" (already "+o.path+")")), true
			default:
				owner[val] = where{i, p}
			}
		}
	}
	return errs, bad
}

// familyError is effective's error ("vnpus[910B2].memoryCapacity: must
// be ...") as a field error under devices.
func familyError(err error) *field.Error {
	key, detail, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return field.Invalid(field.NewPath("devices"), field.OmitValueType{}, err.Error())
	}
	return field.Invalid(field.NewPath("devices."+key), field.OmitValueType{}, detail)
}
