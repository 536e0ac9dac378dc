package dra

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// ask is one exactly request or one firstAvailable subrequest of a governed
// class: what the scheduler allocates devices for.
type ask struct {
	// name is the equivalent container's name and the allocation results'
	// request: "<request>" or "<request>/<subrequest>".
	name      string
	className string
	selectors []resourcev1.DeviceSelector
	mode      resourcev1.DeviceAllocationMode
	count     int64
	capacity  *resourcev1.CapacityRequirements

	class  *Class
	fam    *effective.Family
	famIdx int

	programs  []cel.CompilationResult
	devs      []*device // the eligible devices, once evaluated
	evaluated bool
}

// limits is what the equivalent container names besides its count.
type limits struct {
	memMiB, cores    int64
	hasMem, hasCores bool
	// assigned is the memory of each device the request holds, which a
	// whole-device request resolves against (nil: unknown).
	assigned []int64
}

// charge reads one ask as the container it stands for; false when it is
// invalid (the reasons are recorded).
func (b *builder) charge(a *ask) (effective.Container, bool) {
	if !b.compile(a) {
		return effective.Container{}, false
	}
	nerr := len(b.errs)
	count := b.count(a)
	var lim limits
	if a.class.Mode == ModeCapacity {
		lim = b.capacityLimits(a, count)
	} else {
		lim = b.deviceLimits(a)
	}
	if len(b.errs) > nerr {
		return effective.Container{}, false
	}
	return b.compute(a, count, lim)
}

// compile compiles the ask's CEL selectors (cached by the charger).
func (b *builder) compile(a *ask) bool {
	a.programs = append(a.programs, b.c.programs[a.class.Name]...)
	ok := true
	for i := range a.selectors {
		s := a.selectors[i].CEL
		if s == nil {
			continue // no selector of a kind this version knows: it narrows nothing
		}
		res := b.c.cel.compile(s.Expression)
		if res.Error != nil {
			b.fail(a.name, fmt.Sprintf("selectors[%d]", i), s.Expression, "the CEL selector does not compile: "+res.Error.Error())
			ok = false
			continue
		}
		a.programs = append(a.programs, res)
	}
	return ok
}

// eligible returns the inventory's devices the ask may be allocated: of the
// class's driver, every selector (the class's and the request's) true,
// failing at run time or not evaluated within the claim's CEL budget or the
// caller's deadline (the worst case).
func (b *builder) eligible(a *ask) []*device {
	if a.evaluated {
		return a.devs
	}
	a.evaluated = true
	a.devs = b.inv.pick(&b.eval, a.class.Driver, a.programs)
	return a.devs
}

// count is the number of devices the ask takes (0 when invalid, recorded).
func (b *builder) count(a *ask) int64 {
	switch a.mode {
	case "", resourcev1.DeviceAllocationModeExactCount:
		n := a.count
		if n == 0 {
			n = 1 // the API's default
		}
		if n < 0 || n > resourcev1.AllocationResultsMaxSize {
			b.fail(a.name, a.class.Name, fmt.Sprint(a.count), fmt.Sprintf("count must be within 1..%d, the most devices a claim can be allocated", resourcev1.AllocationResultsMaxSize))
			return 0
		}
		return n
	case resourcev1.DeviceAllocationModeAll:
		if rs := b.results[a.name]; len(rs) > 0 {
			return int64(len(rs))
		}
		n := worstNodeCount(b.eligible(a))
		if n == 0 {
			b.fail(a.name, a.class.Name, string(a.mode), "allocationMode All takes every eligible device of a node and no ResourceSlice publishes an eligible device of the class: the worst case is unknown")
		}
		return n
	}
	b.fail(a.name, a.class.Name, string(a.mode), "unknown allocationMode (ExactCount or All)")
	return 0
}

// capacityLimits reads a shared device's share from capacity.requests:
// memory in bytes rounded up to MiB (none: the whole device, as HAMi books a
// container without gpumem), cores as given; an allocated ask that consumed
// more is charged what it consumed.
func (b *builder) capacityLimits(a *ask, count int64) limits {
	var lim limits
	mem, hasMem := b.requested(a, a.class.MemoryCapacity)
	if used, ok := b.consumed(a, a.class.MemoryCapacity); ok && mem > 0 {
		mem = max(mem, used)
	}
	if hasMem {
		lim.memMiB, lim.hasMem = ceilMiB(mem), true
	}
	if a.class.CoresCapacity != "" {
		cores, hasCores := b.requested(a, a.class.CoresCapacity)
		used, ok := b.consumed(a, a.class.CoresCapacity)
		switch {
		case ok && hasCores:
			cores = max(cores, used)
		case ok && lim.memMiB > 0 && used > a.fam.DefaultCores:
			cores, hasCores = used, true
		}
		lim.cores, lim.hasCores = cores, hasCores
	}
	if lim.memMiB == 0 {
		lim.assigned = b.wholeSizes(a, count)
	}
	return lim
}

// deviceLimits sizes whole devices: the largest allocated device when every
// allocated device is known, else the largest eligible one (eligibleSize);
// unknown leaves the memory (and the cores) to the family's rules.
func (b *builder) deviceLimits(a *ask) limits {
	size, ok := largest(b.allocatedSizes(a))
	if !ok {
		size, ok = b.eligibleSize(a)
	}
	if !ok || size == 0 {
		return limits{}
	}
	return limits{memMiB: size, hasMem: true, cores: a.class.CoresPerDevice, hasCores: true}
}

// wholeSizes are the device sizes a whole-device share resolves against:
// the allocated devices' when known; else, when opts has no device size
// for the family, count times the largest eligible device's.
func (b *builder) wholeSizes(a *ask, count int64) []int64 {
	if sizes := b.allocatedSizes(a); sizes != nil {
		return sizes
	}
	if b.opts[a.fam.Name].DeviceMemoryMiB > 0 || count <= 0 {
		return nil
	}
	size, ok := b.eligibleSize(a)
	if !ok || size == 0 {
		return nil
	}
	out := make([]int64, count)
	for i := range out {
		out[i] = size
	}
	return out
}

// eligibleSize is the device size an ask not allocated yet resolves
// against: the largest plausible memory among its eligible devices. An
// eligible device that publishes no plausible memory (or one the budget
// left unevaluated that does not) may be the one allocated, so it counts as
// the family's fallback size, the one the unknown-size rule resolves
// against (opts' DeviceMemoryMiB): the size is the larger of the two, and
// unknown (false) when there is no fallback. Unknown memory never counts
// as less than the fallback. False too when no device is eligible.
func (b *builder) eligibleSize(a *ask) (int64, bool) {
	size, unknown := largestMiB(b.eligible(a), a.class.MemoryCapacity, b.c.boundOf(a.fam.Name))
	if !unknown {
		return size, size > 0
	}
	fallback := b.opts[a.fam.Name].DeviceMemoryMiB
	if fallback <= 0 {
		return 0, false
	}
	return max(size, fallback), true
}

// allocatedSizes is the memory of each device allocated to the ask, nil
// unless every one is in the inventory, published by the node the claim is
// allocated on (or in a pool that is not node-local), with a plausible
// memory capacity.
func (b *builder) allocatedSizes(a *ask) []int64 {
	rs := b.results[a.name]
	if len(rs) == 0 {
		return nil
	}
	out := make([]int64, 0, len(rs))
	bound := b.c.boundOf(a.fam.Name)
	for _, r := range rs {
		d := b.inv.lookup(r.Driver, r.Pool, r.Device, b.node)
		if d == nil {
			return nil
		}
		m, ok := d.memoryMiB(a.class.MemoryCapacity, bound)
		if !ok {
			return nil
		}
		out = append(out, m)
	}
	return out
}

// largest is the largest of sizes (false for none).
func largest(sizes []int64) (int64, bool) {
	if len(sizes) == 0 {
		return 0, false
	}
	var m int64
	for _, s := range sizes {
		m = max(m, s)
	}
	return m, true
}

// requested reads capacity name of the ask's capacity.requests (plain, or
// qualified with the class's driver); false when absent or invalid
// (recorded).
func (b *builder) requested(a *ask, name string) (int64, bool) {
	if a.capacity == nil {
		return 0, false
	}
	q, ok := a.capacity.Requests[resourcev1.QualifiedName(name)]
	if !ok && a.class.Driver != "" {
		q, ok = a.capacity.Requests[resourcev1.QualifiedName(a.class.Driver+"/"+name)]
	}
	if !ok {
		return 0, false
	}
	v, err := quantityInt(q)
	if err != nil {
		b.fail(a.name, name, q.String(), "the capacity request "+err.Error())
		return 0, false
	}
	return v, true
}

// consumed is the most any device allocated to the ask consumed of
// capacity name; false when none says.
func (b *builder) consumed(a *ask, name string) (int64, bool) {
	var most int64
	found := false
	for _, r := range b.results[a.name] {
		q, ok := r.ConsumedCapacity[resourcev1.QualifiedName(name)]
		if !ok {
			q, ok = r.ConsumedCapacity[resourcev1.QualifiedName(r.Driver+"/"+name)]
		}
		if !ok {
			continue
		}
		v, err := quantityInt(q)
		if err != nil {
			b.fail(a.name, name, q.String(), fmt.Sprintf("the capacity consumed on device %s/%s/%s %s", r.Driver, r.Pool, r.Device, err))
			continue
		}
		most, found = max(most, v), true
	}
	return most, found
}

// compute reads the equivalent container with effective's rules.
func (b *builder) compute(a *ask, count int64, lim limits) (effective.Container, bool) {
	n := a.fam.Names
	rl := corev1.ResourceList{n.Count: *resource.NewQuantity(count, resource.DecimalSI)}
	if lim.hasMem && n.Memory != "" {
		rl[n.Memory] = *resource.NewQuantity(ceilDiv(lim.memMiB, max(a.fam.Factor(), 1)), resource.DecimalSI)
	}
	if lim.hasCores && n.Cores != "" {
		rl[n.Cores] = *resource.NewQuantity(lim.cores, resource.DecimalSI)
	}
	opt := b.opts[a.fam.Name]
	opt.AssignedMemoryMiB = nil
	if len(lim.assigned) > 0 && int64(len(lim.assigned)) == count {
		opt.AssignedMemoryMiB = map[string][]int64{a.name: lim.assigned}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: a.name, Resources: corev1.ResourceRequirements{Limits: rl},
	}}}}
	d, err := effective.Compute(pod, *a.fam, opt)
	if err != nil {
		b.translate(a, err)
		return effective.Container{}, false
	}
	return d.Containers[0], true
}

// translate records effective's reasons against the claim's request, naming
// the class's capacities instead of the family's resources.
func (b *builder) translate(a *ask, err error) {
	var inv *effective.InvalidError
	if !errors.As(err, &inv) {
		b.fail(a.name, a.class.Name, "", err.Error())
		return
	}
	n := a.fam.Names
	for _, fe := range inv.Errors {
		res := fe.Resource
		switch corev1.ResourceName(fe.Resource) {
		case n.Count:
			res = a.class.Name
		case n.Memory:
			res = a.class.MemoryCapacity
		case n.Cores:
			res = a.class.CoresCapacity
		}
		if res == "" {
			res = a.class.Name
		}
		b.fail(a.name, res, fe.Value, fe.Reason)
	}
}
