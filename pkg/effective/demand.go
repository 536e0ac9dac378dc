package effective

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Vector is a demand or usage in gpuadmit's three dimensions. Memory is MiB.
type Vector struct {
	GPU    int64 `json:"gpu"`
	MemMiB int64 `json:"gpumem"`
	Cores  int64 `json:"gpucores"`
}

// IsZero reports whether every dimension is zero.
func (v Vector) IsZero() bool { return v == Vector{} }

// Add returns v + o, or false on overflow.
func (v Vector) Add(o Vector) (Vector, bool) {
	g, ok1 := addInt64(v.GPU, o.GPU)
	m, ok2 := addInt64(v.MemMiB, o.MemMiB)
	c, ok3 := addInt64(v.Cores, o.Cores)
	return Vector{GPU: g, MemMiB: m, Cores: c}, ok1 && ok2 && ok3
}

// Sub returns v - o (callers keep results non-negative).
func (v Vector) Sub(o Vector) Vector {
	return Vector{GPU: v.GPU - o.GPU, MemMiB: v.MemMiB - o.MemMiB, Cores: v.Cores - o.Cores}
}

// Max returns the per-dimension maximum of v and o.
func (v Vector) Max(o Vector) Vector {
	return Vector{GPU: max(v.GPU, o.GPU), MemMiB: max(v.MemMiB, o.MemMiB), Cores: max(v.Cores, o.Cores)}
}

// Demand is a pod's parsed GPU request and its effective demand.
type Demand struct {
	// Family is the name of the family the demand is of.
	Family string
	// Containers lists init containers (spec order) then app containers (spec order).
	Containers []Container
	// Effective is max(steady, initPeak) per dimension (KEP-753), MiB for memory.
	Effective Vector
	// Unresolved names the containers whose memory is a percentage of an
	// unknown device; their memory is not part of Effective.
	Unresolved []string
	// inits is the number of leading Containers that are init containers.
	inits int
}

// GPU reports whether the pod names any managed resource at all.
func (d *Demand) GPU() bool {
	for i := range d.Containers {
		if d.Containers[i].Managed {
			return true
		}
	}
	return false
}

// Options tune Compute.
type Options struct {
	// DeviceMemoryMiB resolves memory percentages (and whole-device
	// requests); 0 leaves them unresolved.
	DeviceMemoryMiB int64
	// AssignedMemoryMiB gives, by container name, the memory of each device
	// assigned to the container. A percentage is resolved against these
	// devices (HAMi books a share of the card it chose) when the container
	// has exactly as many as it asks for; else against DeviceMemoryMiB.
	AssignedMemoryMiB map[string][]int64
	// annotations are the pod's annotations (Compute sets them): Ascend's
	// split mode is a pod annotation (Family.SoftSplit).
	annotations map[string]string
}

// Compute parses every container of pod and computes its effective demand.
// Invalid requests yield an *InvalidError listing every offending container,
// resource and value; no invalid quantity is ever read as zero.
func Compute(pod *corev1.Pod, s Family, opt Options) (*Demand, error) {
	spec := &pod.Spec
	opt.annotations = pod.Annotations
	d := &Demand{Family: s.Name, Containers: make([]Container, 0, len(spec.InitContainers)+len(spec.Containers)), inits: len(spec.InitContainers)}
	var errs []*FieldError
	names := make(map[string]bool, cap(d.Containers))
	add := func(c *corev1.Container, role Role) {
		if names[c.Name] {
			errs = append(errs, &FieldError{Container: c.Name, Resource: "name", Reason: "container name is used twice in the pod"})
		}
		names[c.Name] = true
		pc, fe := parseContainer(c, role, s, opt)
		errs = append(errs, fe...)
		if pc.Unresolved {
			d.Unresolved = append(d.Unresolved, pc.Name)
		}
		d.Containers = append(d.Containers, pc)
	}
	for i := range spec.InitContainers {
		add(&spec.InitContainers[i], InitRole(&spec.InitContainers[i]))
	}
	for i := range spec.Containers {
		add(&spec.Containers[i], RoleApp)
	}
	if len(errs) > 0 {
		return nil, &InvalidError{Errors: errs}
	}
	eff, err := d.From(0)
	if err != nil {
		return nil, err
	}
	d.Effective = eff
	return d, nil
}

// InitRole is the role of an init container: a sidecar when its restart
// policy is Always, else a regular init container.
func InitRole(c *corev1.Container) Role {
	if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		return RoleSidecar
	}
	return RoleInit
}

// From returns the demand counting only the regular init containers at index
// from or later of spec.initContainers (those before it have finished):
// From(0) is the full effective demand, From(len(initContainers)) the steady state.
func (d *Demand) From(from int) (Vector, error) {
	vecs := make([]Vector, len(d.Containers))
	roles := make([]Role, len(d.Containers))
	for i := range d.Containers {
		vecs[i], roles[i] = d.Containers[i].Total, d.Containers[i].Role
	}
	v, ok := combine(vecs, roles, from)
	if !ok {
		return Vector{}, &InvalidError{Errors: []*FieldError{{Container: "*", Resource: "pod", Reason: "the sum of the containers' GPU requests does not fit in a 64-bit integer"}}}
	}
	return v, nil
}

// combine applies the KEP-753 formula to per-container vectors given in the
// order init containers (spec order) then app containers:
//
//	steady   = sum(app) + sum(sidecar)
//	initPeak = max over regular init i (index >= from) of init_i + sum(sidecars declared before i)
//	result   = max(steady, initPeak) per dimension
func combine(vecs []Vector, roles []Role, from int) (Vector, bool) {
	var steady, peak, sidecars Vector
	ok := true
	for i, v := range vecs {
		var o bool
		switch roles[i] {
		case RoleSidecar:
			sidecars, o = sidecars.Add(v)
			ok = ok && o
			steady, o = steady.Add(v)
		case RoleApp:
			steady, o = steady.Add(v)
		default: // RoleInit
			if i < from {
				continue
			}
			var with Vector
			with, o = v.Add(sidecars)
			peak = peak.Max(with)
		}
		ok = ok && o
	}
	return steady.Max(peak), ok
}

// String renders the demand for logs.
func (v Vector) String() string {
	return fmt.Sprintf("gpu=%d gpumem=%dMiB gpucores=%d", v.GPU, v.MemMiB, v.Cores)
}
