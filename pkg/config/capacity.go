package config

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
)

// MaxDeviceMemoryMiB is the plausibility bound (MiB) of a device of each
// family a node announces, in a defaulted configuration
// (capacity.maxDeviceMemoryMiB: the family's entry, else "default"), as a
// function of the family's name: what ledger.Options.MaxDeviceMemoryMiB
// and the DRA inventory's bound take. It reads a copy: later changes to c
// do not show.
func MaxDeviceMemoryMiB(c *Configuration) func(family string) int64 {
	cp := c.Capacity.DeepCopy()
	return func(family string) int64 { return maxDeviceMemoryMiBFor(cp, family) }
}

// validateCapacity checks capacity.maxDeviceMemoryMiB: every bound
// positive, every key "default" or a family the configuration governs (a
// misspelt family would silently keep the default bound).
func validateCapacity(c *Configuration) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("capacity", "maxDeviceMemoryMiB")
	names := []string{configv1alpha1.DefaultFamilyBound}
	for _, f := range Families(c) {
		names = append(names, f.Name)
	}
	bounds := c.Capacity.MaxDeviceMemoryMiB
	for _, k := range slices.Sorted(maps.Keys(bounds)) {
		if !slices.Contains(names, k) {
			errs = append(errs, field.NotSupported(p.Key(k), k, names))
		}
		if bounds[k] < 1 {
			errs = append(errs, field.Invalid(p.Key(k), bounds[k], "must be at least 1 (MiB)"))
		}
	}
	return errs
}

// maxDeviceMemoryMiBFor is the bound of family's devices (MiB) in a
// defaulted configuration: its own entry, else the "default" entry, else
// DefaultMaxDeviceMemoryMiB.
func maxDeviceMemoryMiBFor(c *configv1alpha1.Capacity, family string) int64 {
	if c == nil {
		return DefaultMaxDeviceMemoryMiB
	}
	if b, ok := c.MaxDeviceMemoryMiB[family]; ok {
		return b
	}
	if b, ok := c.MaxDeviceMemoryMiB[configv1alpha1.DefaultFamilyBound]; ok {
		return b
	}
	return DefaultMaxDeviceMemoryMiB
}
