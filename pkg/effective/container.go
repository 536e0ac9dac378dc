package effective

import (
	"fmt"

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
	// CoresPerDevice is the per-device core percentage.
	CoresPerDevice int64
	// Unresolved is true when the memory is a percentage of an unknown device.
	Unresolved bool
	// Total is count x per-device for every dimension, in MiB for memory.
	Total Vector
}

// parseContainer reads one container's managed resources, limits first, then
// requests (HAMi's order). opt resolves memory percentages.
//
// The HAMi rules (pkg/device/nvidia in HAMi): a zero gpumem or gpumem
// percentage is "unset", so the container gets defaultMemory or the whole
// device, never 0 MiB; and, with Settings.ExclusiveCores, a container whose
// memory is the whole device by omission (no gpumem, no percentage) or by a
// percentage of 100, and that sets no gpucores, gets 100 cores per device
// (HAMi's mutating webhook makes such cards exclusive).
func parseContainer(c *corev1.Container, role Role, s Settings, opt Options) (Container, []*FieldError) {
	out := Container{Name: c.Name, Role: role}
	var errs []*FieldError
	get := func(name corev1.ResourceName, max int64) (int64, bool) {
		src, q, ok := "limits", resource.Quantity{}, false
		if q, ok = c.Resources.Limits[name]; !ok {
			src = "requests"
			q, ok = c.Resources.Requests[name]
		}
		if !ok {
			return 0, false
		}
		out.Managed = true
		v, err := quantityInt(q)
		if err == nil && max > 0 && v > max {
			err = fmt.Errorf("must be within 0..%d", max)
		}
		if err != nil {
			errs = append(errs, &FieldError{Container: c.Name, Resource: string(name), Source: src, Value: q.String(), Reason: err.Error()})
			return 0, false
		}
		return v, true
	}
	count, hasCount := get(s.Names.Count, 0)
	mem, hasMem := get(s.Names.Memory, 0)
	pct, hasPct := get(s.Names.MemoryPercentage, 100)
	cores, hasCores := get(s.Names.Cores, 100)
	if !out.Managed || len(errs) > 0 {
		return out, errs
	}
	if !hasCount {
		count = s.DefaultGPUNum
	}
	if !hasCores {
		cores = s.DefaultCores
		if s.ExclusiveCores && count > 0 && ((hasPct && pct == 100) || (!hasPct && !hasMem)) {
			cores = 100
		}
	}
	out.Count, out.CoresPerDevice = count, cores
	switch {
	case mem > 0:
		perDev, ok := mulInt64(mem, s.Factor())
		if !ok {
			return out, []*FieldError{{Container: c.Name, Resource: string(s.Names.Memory), Value: fmt.Sprint(mem),
				Reason: fmt.Sprintf("times memoryFactor %d does not fit in a 64-bit integer", s.Factor())}}
		}
		out.MemPerDeviceMiB = perDev
	case pct > 0:
		out.MemPercent = pct
	case s.DefaultMemory > 0:
		out.MemPerDeviceMiB = s.DefaultMemory
	default:
		out.MemPercent = 100
	}
	memTotal, okMem := out.resolve(opt)
	coreTotal, okCores := mulInt64(count, cores)
	if !okMem {
		errs = append(errs, &FieldError{Container: c.Name, Resource: string(s.Names.Memory), Value: fmt.Sprint(out.MemPerDeviceMiB),
			Reason: fmt.Sprintf("MiB per device times %d devices does not fit in a 64-bit integer", count)})
	}
	if !okCores {
		errs = append(errs, &FieldError{Container: c.Name, Resource: string(s.Names.Cores), Value: fmt.Sprint(cores),
			Reason: fmt.Sprintf("per device times %d devices does not fit in a 64-bit integer", count)})
	}
	out.Total = Vector{GPU: count, MemMiB: memTotal, Cores: coreTotal}
	return out, errs
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
