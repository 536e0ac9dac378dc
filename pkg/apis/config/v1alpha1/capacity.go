package v1alpha1

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
