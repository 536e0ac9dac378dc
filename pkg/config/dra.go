package config

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
)

// DeviceClasses are the DeviceClasses of a defaulted, valid configuration's
// dra section, as the claim charger reads them.
func DeviceClasses(c *Configuration) []dra.Class {
	if c.DRA == nil {
		return nil
	}
	out := make([]dra.Class, 0, len(c.DRA.DeviceClasses))
	for _, dc := range c.DRA.DeviceClasses {
		out = append(out, dra.Class{Name: dc.Name, Family: dc.Family, Mode: dra.Mode(dc.Mode), Driver: dc.Driver,
			MemoryCapacity: *dc.MemoryCapacity, CoresCapacity: *dc.CoresCapacity, CoresPerDevice: *dc.CoresPerDevice,
			Selectors: slices.Clone(dc.Selectors)})
	}
	return out
}

// ChargerOptions are the claim charger's options of a defaulted, valid
// configuration: the drivers of the dra section's network pools, and the
// plausibility bound of each family's devices (capacity.maxDeviceMemoryMiB),
// the same for ResourceSlices as for the nodes' annotations.
func ChargerOptions(c *Configuration) []dra.ChargerOption {
	var opts []dra.ChargerOption
	if c.Capacity != nil {
		opts = append(opts, dra.WithMemoryBound(MaxDeviceMemoryMiB(c)))
	}
	if c.DRA == nil || slices.Contains(c.DRA.NetworkPoolDrivers, configv1alpha1.AnyDriver) {
		return opts
	}
	return append(opts, dra.WithNetworkPoolDrivers(slices.Clone(c.DRA.NetworkPoolDrivers)))
}

// validateDRA checks the dra section: each class named once, a known mode,
// a governed family.
func validateDRA(c *Configuration) field.ErrorList {
	if c.DRA == nil {
		return nil
	}
	var errs field.ErrorList
	governed := map[string]bool{}
	for _, f := range Families(c) {
		governed[f.Name] = true
	}
	seen := map[string]bool{}
	for i, dc := range c.DRA.DeviceClasses {
		p := field.NewPath("dra", "deviceClasses").Index(i)
		for _, msg := range validation.IsDNS1123Subdomain(dc.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), dc.Name, msg))
		}
		if seen[dc.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), dc.Name))
		}
		seen[dc.Name] = true
		if !governed[dc.Family] {
			errs = append(errs, field.NotSupported(p.Child("family"), dc.Family, sortedKeys(governed)))
		}
		switch dc.Mode {
		case configv1alpha1.DeviceClassCapacity, configv1alpha1.DeviceClassDevice:
		default:
			errs = append(errs, field.NotSupported(p.Child("mode"), dc.Mode,
				[]configv1alpha1.DeviceClassMode{configv1alpha1.DeviceClassCapacity, configv1alpha1.DeviceClassDevice}))
		}
		if *dc.MemoryCapacity == "" {
			errs = append(errs, field.Required(p.Child("memoryCapacity"), "the capacity name holding a device's memory in bytes"))
		}
		if *dc.CoresPerDevice < 0 {
			errs = append(errs, field.Invalid(p.Child("coresPerDevice"), *dc.CoresPerDevice, "must not be negative"))
		}
	}
	return append(errs, validateNetworkPoolDrivers(c.DRA.NetworkPoolDrivers)...)
}

// validateNetworkPoolDrivers checks dra.networkPoolDrivers: driver names
// (DNS subdomains) once each, or "*" alone.
func validateNetworkPoolDrivers(drivers []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("dra", "networkPoolDrivers")
	seen := map[string]bool{}
	for i, d := range drivers {
		switch {
		case d == configv1alpha1.AnyDriver && len(drivers) > 1:
			errs = append(errs, field.Invalid(p.Index(i), d, `"*" (every driver) must be the only entry`))
		case d == configv1alpha1.AnyDriver:
		case seen[d]:
			errs = append(errs, field.Duplicate(p.Index(i), d))
		default:
			for _, msg := range validation.IsDNS1123Subdomain(d) {
				errs = append(errs, field.Invalid(p.Index(i), d, msg))
			}
		}
		seen[d] = true
	}
	return errs
}
