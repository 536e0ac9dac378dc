package v1alpha1

import (
	"maps"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// Capacity says how far gpuadmit believes the device capacity nodes
// announce (the node agent's gpuadmit.io/gpu-devices, HAMi's
// hami.io/node-*-register annotations).
type Capacity struct {
	// MaxDeviceMemoryMiB is, per device family (by name, docs/devices.md),
	// the largest device memory in MiB a node may announce: a device above
	// it is reported as a node problem and sizes no charge. The key
	// "default" is the bound of every family not named (default
	// {"default": 1048576}, 1 TiB: twice and more the largest device any
	// family ships).
	MaxDeviceMemoryMiB map[string]int64 `json:"maxDeviceMemoryMiB,omitempty"`
}

// DefaultFamilyBound is the key of Capacity.MaxDeviceMemoryMiB that bounds
// every family not named.
const DefaultFamilyBound = "default"

// DefaultMaxDeviceMemoryMiB is the default bound of every family: 1 TiB
// (devices.DefaultMaxDeviceMemoryMiB).
const DefaultMaxDeviceMemoryMiB = devices.DefaultMaxDeviceMemoryMiB

func setDefaultsCapacity(c *Configuration) {
	c.Capacity = orNew(c.Capacity)
	if _, ok := c.Capacity.MaxDeviceMemoryMiB[DefaultFamilyBound]; !ok {
		m := maps.Clone(c.Capacity.MaxDeviceMemoryMiB)
		if m == nil {
			m = map[string]int64{}
		}
		m[DefaultFamilyBound] = DefaultMaxDeviceMemoryMiB
		c.Capacity.MaxDeviceMemoryMiB = m
	}
}

// MaxDeviceMemoryMiBFor is the bound of family's devices (MiB) in a
// defaulted configuration: its own entry, else the "default" entry, else
// DefaultMaxDeviceMemoryMiB.
func (c *Capacity) MaxDeviceMemoryMiBFor(family string) int64 {
	if c == nil {
		return DefaultMaxDeviceMemoryMiB
	}
	if b, ok := c.MaxDeviceMemoryMiB[family]; ok {
		return b
	}
	if b, ok := c.MaxDeviceMemoryMiB[DefaultFamilyBound]; ok {
		return b
	}
	return DefaultMaxDeviceMemoryMiB
}
