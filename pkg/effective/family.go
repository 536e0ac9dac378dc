package effective

import (
	corev1 "k8s.io/api/core/v1"
)

// ResourceNames are the extended resource names gpuadmit manages.
type ResourceNames struct {
	Count            corev1.ResourceName
	Memory           corev1.ResourceName
	MemoryPercentage corev1.ResourceName
	Cores            corev1.ResourceName
}

// Family is one device family: the resource names of one HAMi device backend
// and how a container's request of them is read (HAMi's booking rules).
type Family struct {
	// Name identifies the family ("nvidia", "ascend-910B2", ...): the key of
	// its usage in a Usage and in every report.
	Name  string
	Names ResourceNames
	// DefaultMemory is the per-device memory in MiB of a container that sets
	// neither memory nor a memory percentage; 0 means the whole device.
	DefaultMemory int64
	// DefaultCores is the per-device core percentage of a container that sets none.
	DefaultCores int64
	// DefaultGPUNum is the device count of a container that sets memory or
	// cores but no count.
	DefaultGPUNum int64
	// MemoryFactor converts the memory resource's units to MiB; 0 means 1.
	MemoryFactor int64
	// ExclusiveCores gives 100 cores per device to a container that asks
	// for whole devices (no memory, or a percentage of 100) and sets no
	// cores, as HAMi's mutating webhook does.
	ExclusiveCores bool

	// Section is the key path of the family's section in HAMi's device
	// configuration ("nvidia", "vnpus[910B2]"), which Validate's messages
	// name; empty means Name (and "nvidia" when both are empty).
	Section string
	// Rule is how a container's request is read; the Default* fields and
	// ExclusiveCores apply to RuleShare (the zero value) only.
	Rule Rule
	// NoMemory, NoPercentage and NoCores mark the resources the backend
	// does not have: their names stay empty (Validate requires the others).
	NoMemory, NoPercentage, NoCores bool
	// CoreUnits is the cores of one whole device in the family's core unit
	// (Moore Threads 16, AWS Neuron 2); 0 means 100, a percentage.
	CoreUnits int64
	// MinCores is the smallest core request accepted (AMD's webhook
	// rejects 0); 0 accepts 0.
	MinCores int64
	// ByteMemory: a memory quantity written with a unit suffix ("2048Mi",
	// "4Gi") is bytes, floored to MiB; a plain number is MemoryFactor units
	// (Metax sGPU).
	ByteMemory bool
	// MultiCores: a container asking for more than one device gets all the
	// cores of each (Iluvatar's webhook).
	MultiCores bool
	// Whole is what one whole device books: every device under RuleWhole
	// (a zero MemMiB: no memory), a container that sets no memory under
	// RuleTemplates and RuleSlices.
	Whole Template
	// Templates are the sizes a device splits into, by ascending memory,
	// unused entries zero: RuleTemplates rounds the memory up to them (the
	// raw request is compared and the result multiplied by MemoryFactor,
	// as HAMi does), RuleSlices requires one exactly (in MiB).
	Templates [MaxTemplates]Template
	// MemoryCapacity is the largest memory RuleTemplates accepts above the
	// templates (booked as Whole); more is an error.
	MemoryCapacity int64
	// SingleSplit: a template smaller than Whole is for a single device
	// only (Ascend's webhook rejects it for more).
	SingleSplit bool
	// SoftSplit: the pod annotation huawei.com/vnpu-mode: hami-core books
	// memory and cores as requested instead of templates (Ascend).
	SoftSplit bool
	// DevicePairs: devices come in pairs, a count of 1 books 2 and other
	// odd counts are rejected (Ascend 910C super pods).
	DevicePairs bool

	// RegisterAnno is the node annotation the backend's device plugin
	// registers its devices in; empty when HAMi reads the node's capacity.
	RegisterAnno string
	// AllocAnno is the pod annotation HAMi writes the backend's device
	// assignment to.
	AllocAnno string
	// DeviceType is the type (second field) of the assignment's entries;
	// empty when they carry the device's registered model (AMD).
	DeviceType string
}

// NvidiaName is the nvidia family's name: the family whose usage every
// format keeps at its first level (docs/design.md, device families).
const NvidiaName = "nvidia"

// Nvidia returns the nvidia family with HAMi's defaults.
func Nvidia() Family {
	return Family{
		Name: NvidiaName,
		Names: ResourceNames{
			Count:            "nvidia.com/gpu",
			Memory:           "nvidia.com/gpumem",
			MemoryPercentage: "nvidia.com/gpumem-percentage",
			Cores:            "nvidia.com/gpucores",
		},
		DefaultMemory:  0,
		DefaultCores:   0,
		DefaultGPUNum:  1,
		MemoryFactor:   1,
		ExclusiveCores: true,
		Section:        "nvidia",
		RegisterAnno:   "hami.io/node-nvidia-register",
		AllocAnno:      "hami.io/vgpu-devices-allocated",
		DeviceType:     "NVIDIA",
	}
}

// Factor returns the memory factor in effect (0 means 1).
func (s Family) Factor() int64 {
	if s.MemoryFactor == 0 {
		return 1
	}
	return s.MemoryFactor
}

// coreUnits returns the cores of one whole device (CoreUnits, 0 means 100).
func (s Family) coreUnits() int64 {
	if s.CoreUnits == 0 {
		return 100
	}
	return s.CoreUnits
}

// coreLimit is the largest core request read: a device's cores, no limit
// under RuleCoreSplit (a core count there spans devices).
func (s Family) coreLimit() int64 {
	if s.Rule == RuleCoreSplit {
		return 0
	}
	return s.coreUnits()
}

// Managed reports whether name is one of the managed resource names.
func (s Family) Managed(name corev1.ResourceName) bool {
	n := s.Names
	return name == n.Count || name == n.Memory || name == n.MemoryPercentage || name == n.Cores
}

// Requests reports whether any container of pod names a managed resource in
// its limits or requests: the one test of "is this a GPU pod" (a pod that
// does not is never charged and takes the admission fast path).
func (s Family) Requests(pod *corev1.Pod) bool {
	for _, list := range [2][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			r := &list[i].Resources
			for _, rl := range [2]corev1.ResourceList{r.Limits, r.Requests} {
				for name := range rl {
					if s.Managed(name) {
						return true
					}
				}
			}
		}
	}
	return false
}
