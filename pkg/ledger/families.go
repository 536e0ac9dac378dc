package ledger

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// familySizes reads, for every family after the first (whose devices
// nodeDevices reads), the largest device memory the node's register
// annotation of that family announces. A family the node does not announce
// is absent; a garbled announcement is a problem and leaves the family's
// size unknown on the node (never 0 capacity charged as free: a share of
// an unknown device stays unresolved, and the policies deny it). A device
// above the family's plausibility bound (boundOf) is a problem too, and is
// left out: the others size the family on the node.
func (l *Ledger) familySizes(n *corev1.Node) (map[string]int64, []Problem) {
	var sizes map[string]int64
	var problems []Problem
	for i := 1; i < len(l.families); i++ {
		f := &l.families[i]
		value, ok := n.Annotations[f.RegisterAnno]
		if f.RegisterAnno == "" || !ok {
			continue
		}
		size, err := registeredSize(n.Name, f.RegisterAnno, value, l.boundOf(f.Name))
		var implausible *devices.ImplausibleError
		if errors.As(err, &implausible) {
			problems = append(problems, nodeProblem(n.Name, f.RegisterAnno, value,
				fmt.Sprintf("node announces an implausible %s device: %v", f.Name, err)))
		} else if err != nil {
			problems = append(problems, nodeProblem(n.Name, f.RegisterAnno, value, fmt.Sprintf("node has no known %s devices: %v", f.Name, err)))
			continue
		}
		if sizes == nil {
			sizes = map[string]int64{}
		}
		sizes[f.Name] = size
	}
	return sizes, problems
}

// registeredSize decodes one HAMi register annotation and returns its
// largest healthy device memory (MiB) among the devices within boundMiB;
// devices above it are left out and named by an *devices.ImplausibleError
// returned with the size of the others.
func registeredSize(node, key, value string, boundMiB int64) (int64, error) {
	backend, ok := backendOf(key)
	if !ok {
		return 0, fmt.Errorf("annotation %s: no HAMi backend registers devices in it", key)
	}
	devs, err := backend.DecodeNodeRegister(node, value)
	if err != nil {
		return 0, err
	}
	devs, implausible := devices.BoundHAMiDevices(key, devs, boundMiB)
	var size int64
	for _, d := range devs {
		if d.Healthy {
			size = max(size, d.MemoryMiB)
		}
	}
	return size, implausible
}

// backendOf finds the HAMi backend whose node register annotation is key
// (Ascend and Iluvatar chips beyond HAMi's defaults included).
func backendOf(key string) (devices.BackendAnnotations, bool) {
	for _, b := range devices.HAMiAnnotations() {
		if b.NodeRegister == key {
			return b, true
		}
	}
	return devices.BackendAnnotations{}, false
}

// FamilySizesFor is ResolveSizeFor for the families other than the first:
// the device size each one's shares and whole devices of pod resolve
// against, the largest its register annotations announce on the nodes the
// pod may run on (its own node once bound: Eligible); a family no eligible
// node announces is absent (nil when no node announces any).
func (c *Capacity) FamilySizesFor(pod *corev1.Pod) map[string]int64 {
	if c == nil || len(c.FamilyNodes) == 0 {
		return nil
	}
	sizes := map[string]int64{}
	match := Eligible(pod)
	for _, n := range c.FamilyNodes {
		if match != nil && !match(&NodeCapacity{Name: n.Name, Labels: n.Labels}) {
			continue
		}
		for f, size := range n.MaxMemMiB {
			sizes[f] = max(sizes[f], size)
		}
	}
	return sizes
}

// ResolveSizesFor is ResolveSizeFor for every family of fams (the first
// from the nodes' GPU devices, the others as FamilySizesFor).
func (c *Capacity) ResolveSizesFor(pod *corev1.Pod, fams []effective.Family) map[string]int64 {
	if len(fams) == 0 || c == nil {
		return nil
	}
	sizes := c.FamilySizesFor(pod)
	if sizes == nil {
		sizes = make(map[string]int64, 1)
	}
	sizes[fams[0].Name] = c.ResolveSizeFor(pod)
	return sizes
}

// optionsOf are the Compute options per family for the given sizes.
func optionsOf(sizes map[string]int64) map[string]effective.Options {
	opts := make(map[string]effective.Options, len(sizes))
	for f, size := range sizes {
		opts[f] = effective.Options{DeviceMemoryMiB: size}
	}
	return opts
}

// withGpushare adds to assign the gpushare device of a bound pod: the GPU
// of its node its ALIYUN_COM_GPU_MEM_IDX names (gpushare's scheduler
// extender puts a pod's gpu-mem on one device), charged with each
// container's gpushare memory. A pod without the annotation is charged to
// its namespace only; an index that is not a GPU index is a warning.
func withGpushare(pod *corev1.Pod, d effective.Demands, assign effective.Assignment) (effective.Assignment, *Problem) {
	share := d.Of(effective.Gpushare().Name)
	value, ok := pod.Annotations[devices.GpushareIndexAnnotation]
	if share == nil || !ok || pod.Spec.NodeName == "" {
		return assign, nil
	}
	idx, err := strconv.Atoi(value)
	if err != nil || idx < 0 {
		return assign, podProblem(pod, fmt.Errorf("device usage not recorded: %s %q is not a GPU index", devices.GpushareIndexAnnotation, value))
	}
	out := maps.Clone(assign)
	if out == nil {
		out = effective.Assignment{}
	}
	for _, c := range share.Containers {
		if c.Count > 0 {
			out[c.Name] = append(slices.Clone(out[c.Name]), effective.DeviceUse{UUID: devices.GpushareDevice(idx), MemMiB: c.Total.MemMiB})
		}
	}
	return out, nil
}
