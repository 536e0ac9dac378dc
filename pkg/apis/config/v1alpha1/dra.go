package v1alpha1

// DRA says which Dynamic Resource Allocation DeviceClasses gpuadmit governs
// and how the devices a ResourceClaim asks of each are charged. Omitted,
// the shipped classes are governed (pkg/config's DefaultDeviceClasses); an
// empty list governs none.
type DRA struct {
	// DeviceClasses are the governed classes, each charged to a family.
	DeviceClasses []DeviceClass `json:"deviceClasses"`
	// NetworkPoolDrivers are the drivers whose ResourceSlices may publish
	// pools that are not node-local (spec.nodeSelector, spec.allNodes,
	// spec.perDeviceNodeSelection): a node can only write slices of its own
	// node name, so such slices come from a cluster-wide identity (the
	// driver's controller). The devices of another driver's such pools are
	// not used and are reported. Omitted: ["*"], every driver (as before
	// this setting); an empty list: none.
	NetworkPoolDrivers []string `json:"networkPoolDrivers,omitempty"`
}

// AnyDriver in NetworkPoolDrivers trusts every driver.
const AnyDriver = "*"

// DeviceClassMode is how a class's devices are sized.
type DeviceClassMode string

// Values of DeviceClass.Mode.
const (
	// DeviceClassCapacity: devices are shared; a request names its share
	// in capacity.requests (HAMi-DRA's consumable capacity).
	DeviceClassCapacity DeviceClassMode = "Capacity"
	// DeviceClassDevice: whole devices; a device's memory is what its
	// ResourceSlice publishes (NVIDIA's DRA driver, MIG devices included).
	DeviceClassDevice DeviceClassMode = "Device"
)

// DeviceClass is one governed DeviceClass.
type DeviceClass struct {
	// Name is the DeviceClass's name.
	Name string `json:"name"`
	// Family is the device family the devices are charged to, by name
	// (docs/devices.md lists them; default "nvidia").
	Family string `json:"family,omitempty"`
	// Mode: Capacity or Device.
	Mode DeviceClassMode `json:"mode"`
	// Driver is the driver whose ResourceSlices publish the class's
	// devices (CEL selectors and device sizes are read from them); empty:
	// any driver.
	Driver string `json:"driver,omitempty"`
	// MemoryCapacity names the capacity holding memory in bytes, in a
	// request's capacity.requests and in a device's capacity (default
	// "memory").
	MemoryCapacity *string `json:"memoryCapacity,omitempty"`
	// CoresCapacity names the capacity holding cores in a request's
	// capacity.requests (Capacity mode; default "cores").
	CoresCapacity *string `json:"coresCapacity,omitempty"`
	// CoresPerDevice is what a whole device is charged in cores (Device
	// mode; default 0).
	CoresPerDevice *int64 `json:"coresPerDevice,omitempty"`
	// Selectors are the DeviceClass's own CEL selectors (its
	// spec.selectors), which tell its devices from those of another class
	// of the same driver (NVIDIA's whole GPUs and MIG devices).
	Selectors []string `json:"selectors,omitempty"`
}

// The classes governed when the configuration has no dra section.
const (
	// HAMiDRAClass is HAMi-DRA's class (consumable memory and cores).
	HAMiDRAClass = "hami-core-gpu.project-hami.io"
	// NvidiaGPUClass is NVIDIA's DRA driver's class for whole GPUs.
	NvidiaGPUClass = "gpu.nvidia.com"
	// NvidiaMIGClass is NVIDIA's DRA driver's class for MIG devices.
	NvidiaMIGClass = "mig.nvidia.com"
)
