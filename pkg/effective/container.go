package effective

import (
	"fmt"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Role is a container's role in the pod's lifecycle.
type Role string

// Container roles.
const (
	RoleInit    Role = "init"    // regular init container: runs to completion, in order, before apps
	RoleSidecar Role = "sidecar" // init container with restartPolicy Always: runs beside later inits and apps
	RoleApp     Role = "app"     // regular container
)

// Container is one container's parsed GPU request.
type Container struct {
	Name string
	Role Role
	// Managed is true when the container names at least one managed resource.
	Managed bool
	// Count is the number of devices.
	Count int64
	// MemPerDeviceMiB is the memory per device in MiB (memory factor applied);
	// 0 while a percentage is unresolved.
	MemPerDeviceMiB int64
	// MemPercent is the per-device memory as a share of the device (1..100) when
	// the memory was given as a percentage or defaults to the whole device; 0 otherwise.
	MemPercent int64
	// CoresPerDevice is the per-device cores: a percentage, or the family's
	// core unit (Family.CoreUnits).
	CoresPerDevice int64
	// Unresolved is true when the memory is a percentage of an unknown
	// device.
	Unresolved bool
	// Total is count x per-device for every dimension, in MiB for memory.
	Total Vector
}

// parseContainer reads one container's managed resources, limits first, then
// requests (HAMi's order). opt resolves memory percentages.
//
// The HAMi rules (pkg/device/nvidia in HAMi): a zero gpumem or gpumem
// percentage is "unset", so the container gets defaultMemory or the whole
// device, never 0 MiB; and, with Family.ExclusiveCores, a container whose
// memory is the whole device by omission (no gpumem, no percentage) or by a
// percentage of 100, and that sets no gpucores, gets 100 cores per device
// (HAMi's mutating webhook makes such cards exclusive). The other backends
// of this rule differ by data: Family.ByteMemory, Family.MinCores,
// Family.MultiCores, Family.CoreUnits. Families of another Rule are read
// by parseRule.
func parseContainer(c *corev1.Container, role Role, s Family, opt Options) (Container, []*FieldError) {
	if s.Rule != RuleShare {
		return parseRule(c, role, s, opt)
	}
	out := Container{Name: c.Name, Role: role}
	r := resourceReader{c: c}
	count, hasCount := r.read(s.Names.Count, 0)
	mem, memMiB, hasMem := r.readMemory(s)
	pct, hasPct := r.read(s.Names.MemoryPercentage, 100)
	cores, hasCores := r.readCores(s)
	out.Managed = r.managed
	if !out.Managed || len(r.errs) > 0 {
		return out, r.errs
	}
	if !hasCount {
		count = s.DefaultGPUNum
	}
	if !hasCores {
		wholeDevice := (hasPct && pct == 100) || (!hasPct && !hasMem)
		cores = defaultCores(s, count, wholeDevice)
	}
	if s.MultiCores && count > 1 {
		cores = s.coreUnits()
	}
	out.Count, out.CoresPerDevice = count, cores
	if fe := out.setMemory(mem, memMiB, pct, s); fe != nil {
		return out, []*FieldError{fe}
	}
	return out, out.setTotal(s, opt)
}

// resourceReader reads a container's managed resources, remembering whether
// any was named and every value that could not be read.
type resourceReader struct {
	c       *corev1.Container
	managed bool
	errs    []*FieldError
}

// read returns the value of name, from the limits if they name it, else from
// the requests; limit > 0 is the largest value allowed. It returns false when
// neither names it or the value is invalid (recorded in r.errs).
func (r *resourceReader) read(name corev1.ResourceName, limit int64) (int64, bool) {
	q, src, ok := lookupResource(r.c, name)
	if !ok {
		return 0, false
	}
	r.managed = true
	v, err := boundedInt(q, limit)
	if err != nil {
		r.errs = append(r.errs, &FieldError{Container: r.c.Name, Resource: string(name), Source: src, Value: q.String(), Reason: err.Error()})
		return 0, false
	}
	return v, true
}

// readCores reads the cores (at most a device's Family.CoreUnits), which
// must be at least Family.MinCores when set.
func (r *resourceReader) readCores(s Family) (int64, bool) {
	v, ok := r.read(s.Names.Cores, s.coreLimit())
	if ok && v < s.MinCores {
		r.errs = append(r.errs, r.fail(s.Names.Cores, fmt.Sprintf("must be within %d..%d", s.MinCores, s.coreUnits())))
		return 0, false
	}
	return v, ok
}

// readMemory reads the memory in the family's units, or, with
// Family.ByteMemory and a quantity written with a unit suffix ("2048Mi",
// "4Gi"), as bytes floored to MiB (mib true); a byte count under 1 MiB is an
// error, where HAMi would book it as 0, the whole device.
func (r *resourceReader) readMemory(s Family) (v int64, mib, ok bool) {
	v, ok = r.readMem(s, 0)
	if !ok || !s.ByteMemory {
		return v, false, ok
	}
	if q, _, _ := lookupResource(r.c, s.Names.Memory); !strings.ContainsFunc(q.String(), unicode.IsLetter) {
		return v, false, true
	}
	if v > 0 && v < 1<<20 {
		r.errs = append(r.errs, r.fail(s.Names.Memory, fmt.Sprintf("is %d bytes (a quantity with a unit is bytes), less than 1 MiB", v)))
		return 0, false, false
	}
	return v >> 20, true, true
}

// lookupResource returns the quantity of name in c's limits, else in its
// requests, and which of the two ("limits", "requests") holds it.
func lookupResource(c *corev1.Container, name corev1.ResourceName) (resource.Quantity, string, bool) {
	if q, ok := c.Resources.Limits[name]; ok {
		return q, "limits", true
	}
	q, ok := c.Resources.Requests[name]
	return q, "requests", ok
}

// boundedInt returns q as an integer, which must be at most limit when limit
// is positive.
func boundedInt(q resource.Quantity, limit int64) (int64, error) {
	v, err := quantityInt(q)
	if err == nil && limit > 0 && v > limit {
		err = fmt.Errorf("must be within 0..%d", limit)
	}
	return v, err
}

// defaultCores is the per-device cores of a container that sets no gpucores:
// Family.DefaultCores, or 100 with Family.ExclusiveCores when the
// container asks for devices and its memory is the whole device.
func defaultCores(s Family, count int64, wholeDevice bool) int64 {
	if s.ExclusiveCores && count > 0 && wholeDevice {
		return 100
	}
	return s.DefaultCores
}

// setMemory sets the per-device memory from the gpumem (mem, times the
// memory factor unless memMiB says it is MiB already) or the percentage
// (pct) the container gave, else from the defaults (defaultMemory, else the
// whole device). It returns an error when mem times the memory factor
// overflows.
func (c *Container) setMemory(mem int64, memMiB bool, pct int64, s Family) *FieldError {
	switch {
	case mem > 0 && memMiB:
		c.MemPerDeviceMiB = mem
	case mem > 0:
		perDev, ok := mulInt64(mem, s.Factor())
		if !ok {
			return &FieldError{Container: c.Name, Resource: string(s.Names.Memory), Value: fmt.Sprint(mem),
				Reason: fmt.Sprintf("times memoryFactor %d does not fit in a 64-bit integer", s.Factor())}
		}
		c.MemPerDeviceMiB = perDev
	case pct > 0:
		c.MemPercent = pct
	case s.DefaultMemory > 0:
		c.MemPerDeviceMiB = s.DefaultMemory
	default:
		c.MemPercent = 100
	}
	return nil
}

// setTotal resolves the memory (opt) and sets Total, count times per-device
// in every dimension; it returns an error for each dimension that overflows.
func (c *Container) setTotal(s Family, opt Options) []*FieldError {
	var errs []*FieldError
	memTotal, okMem := c.resolve(opt)
	coreTotal, okCores := mulInt64(c.Count, c.CoresPerDevice)
	if !okMem {
		errs = append(errs, &FieldError{Container: c.Name, Resource: string(s.Names.Memory), Value: fmt.Sprint(c.MemPerDeviceMiB),
			Reason: fmt.Sprintf("MiB per device times %d devices does not fit in a 64-bit integer", c.Count)})
	}
	if !okCores {
		errs = append(errs, &FieldError{Container: c.Name, Resource: string(s.Names.Cores), Value: fmt.Sprint(c.CoresPerDevice),
			Reason: fmt.Sprintf("per device times %d devices does not fit in a 64-bit integer", c.Count)})
	}
	c.Total = Vector{GPU: c.Count, MemMiB: memTotal, Cores: coreTotal}
	return errs
}

// resolve sets the per-device memory of a percentage (against the devices
// assigned to the container when their sizes are known, else against
// opt.DeviceMemoryMiB) and returns the container's total memory.
func (c *Container) resolve(opt Options) (int64, bool) {
	if c.MemPercent == 0 {
		return mulInt64(c.Count, c.MemPerDeviceMiB)
	}
	if devs := opt.AssignedMemoryMiB[c.Name]; c.Count > 0 && int64(len(devs)) == c.Count {
		var total int64
		ok := true
		for _, m := range devs {
			per := m/100*c.MemPercent + m%100*c.MemPercent/100 // m*p/100 without overflow
			c.MemPerDeviceMiB = max(c.MemPerDeviceMiB, per)
			var o bool
			total, o = addInt64(total, per)
			ok = ok && o
		}
		return total, ok
	}
	if opt.DeviceMemoryMiB > 0 {
		c.MemPerDeviceMiB = opt.DeviceMemoryMiB/100*c.MemPercent + opt.DeviceMemoryMiB%100*c.MemPercent/100
		return mulInt64(c.Count, c.MemPerDeviceMiB)
	}
	c.Unresolved = c.Count > 0
	return 0, true
}
