package config

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Settings are how a defaulted configuration's devices section reads a
// container's request.
func Settings(c *Configuration) effective.Family {
	n := c.Devices.Nvidia
	return effective.Family{
		Names: effective.ResourceNames{
			Count:            corev1.ResourceName(*n.ResourceCountName),
			Memory:           corev1.ResourceName(*n.ResourceMemoryName),
			MemoryPercentage: corev1.ResourceName(*n.ResourceMemoryPercentageName),
			Cores:            corev1.ResourceName(*n.ResourceCoreName),
		},
		DefaultMemory:  *n.DefaultMemory,
		DefaultCores:   *n.DefaultCores,
		DefaultGPUNum:  *n.DefaultGPUNum,
		MemoryFactor:   *n.MemoryFactor,
		ExclusiveCores: *n.ExclusiveCores,
	}
}
