package effective

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
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
// requests (HAMi's order). deviceMiB resolves memory percentages (0: unknown).
func parseContainer(c *corev1.Container, role Role, s Settings, deviceMiB int64) (Container, []*FieldError) {
	out := Container{Name: c.Name, Role: role}
	var errs []*FieldError
	get := func(name corev1.ResourceName, max int64) (int64, bool) {
		q, ok := c.Resources.Limits[name]
		if !ok {
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
			errs = append(errs, &FieldError{Container: c.Name, Resource: string(name), Value: q.String(), Reason: err.Error()})
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
	}
	out.Count, out.CoresPerDevice = count, cores
	switch {
	case hasMem:
		perDev, ok := mulInt64(mem, s.Factor())
		if !ok {
			return out, []*FieldError{{Container: c.Name, Resource: string(s.Names.Memory), Value: fmt.Sprint(mem),
				Reason: fmt.Sprintf("times memoryFactor %d does not fit in a 64-bit integer", s.Factor())}}
		}
		out.MemPerDeviceMiB = perDev
	case hasPct:
		out.MemPercent = pct
	case s.DefaultMemory > 0:
		out.MemPerDeviceMiB = s.DefaultMemory
	default:
		out.MemPercent = 100
	}
	if out.MemPercent > 0 {
		if deviceMiB > 0 {
			out.MemPerDeviceMiB = deviceMiB * out.MemPercent / 100
		} else {
			out.Unresolved = count > 0
		}
	}
	memTotal, okMem := mulInt64(count, out.MemPerDeviceMiB)
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
