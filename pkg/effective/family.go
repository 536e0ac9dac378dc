package effective

import (
	"fmt"

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
}

// Nvidia returns the nvidia family with HAMi's defaults.
func Nvidia() Family {
	return Family{
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
	}
}

// Factor returns the memory factor in effect (0 means 1).
func (s Family) Factor() int64 {
	if s.MemoryFactor == 0 {
		return 1
	}
	return s.MemoryFactor
}

// Managed reports whether name is one of the managed resource names.
func (s Family) Managed(name corev1.ResourceName) bool {
	n := s.Names
	return name == n.Count || name == n.Memory || name == n.MemoryPercentage || name == n.Cores
}

// Validate checks the settings; errors name the HAMi configuration key.
func (s Family) Validate() error {
	names := []struct {
		key string
		val corev1.ResourceName
	}{
		{"resourceCountName", s.Names.Count},
		{"resourceMemoryName", s.Names.Memory},
		{"resourceMemoryPercentageName", s.Names.MemoryPercentage},
		{"resourceCoreName", s.Names.Cores},
	}
	seen := map[corev1.ResourceName]string{}
	for _, n := range names {
		if n.val == "" {
			return fmt.Errorf("nvidia.%s: must not be empty", n.key)
		}
		if other, dup := seen[n.val]; dup {
			return fmt.Errorf("nvidia.%s: %q is already used by nvidia.%s", n.key, n.val, other)
		}
		seen[n.val] = n.key
	}
	switch {
	case s.DefaultMemory < 0:
		return fmt.Errorf("nvidia.defaultMemory: must be >= 0, got %d", s.DefaultMemory)
	case s.DefaultCores < 0 || s.DefaultCores > 100:
		return fmt.Errorf("nvidia.defaultCores: must be within 0..100, got %d", s.DefaultCores)
	case s.DefaultGPUNum < 0:
		return fmt.Errorf("nvidia.defaultGPUNum: must be >= 0, got %d", s.DefaultGPUNum)
	case s.MemoryFactor < 0:
		return fmt.Errorf("nvidia.memoryFactor: must be >= 0 (0 means 1), got %d", s.MemoryFactor)
	}
	return nil
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
