package devices

import "fmt"

// NodeEncoding names how a HAMi backend announces a node's devices.
type NodeEncoding string

// The node encodings of HAMi's backends.
const (
	// EncodingHAMiJSON is HAMi's JSON array of devices
	// ([{"id":..,"count":..,"devmem":..,"devcore":..,"type":..,"health":..}]).
	EncodingHAMiJSON NodeEncoding = "hami-json"
	// EncodingHAMiLegacy is HAMi's colon-separated list
	// "id,count,devmem,devcore,type,numa,health[,index,mode]:".
	EncodingHAMiLegacy NodeEncoding = "hami-legacy"
	// EncodingMetaxSGPU is MetaX's JSON array of sGPU-capable cards
	// ([{"uuid":..,"totalDevCount":..,"totalCompute":..,"totalVRam":..,"healthy":..}]).
	EncodingMetaxSGPU NodeEncoding = "metax-sgpu-json"
	// EncodingEnflameDRS is Enflame's DRS capacity object
	// ({"devices":[{"index":..,"minor":..,"capacity":..}],"profiles":{"<n>g.<m>gb":..}}).
	EncodingEnflameDRS NodeEncoding = "enflame-drs-json"
	// EncodingCapacity means no annotation: HAMi derives the node's devices
	// from its extended-resource capacity (NodeCapacity).
	EncodingCapacity NodeEncoding = "node-capacity"
)

// Units of the memory and core figures a backend registers and books.
const (
	// UnitMiB is memory in MiB.
	UnitMiB = "MiB"
	// UnitNone means the figure is a constant placeholder, not a quantity.
	UnitNone = "none"
	// UnitPercent is cores in percent of one device (HAMi's core scaling
	// may register more than 100).
	UnitPercent = "percent"
	// UnitAICores is Ascend's AI-core count (percent on nodes running hami-vnpu-core).
	UnitAICores = "ai-cores"
	// UnitComputeUnits is AMD's compute-unit (CU) count.
	UnitComputeUnits = "compute-units"
	// UnitNeuronCoreMask is AWS Neuron's bit mask of NeuronCores.
	UnitNeuronCoreMask = "neuroncore-mask"
	// UnitSGPUCores is Moore Threads' sGPU core units (16 per GPU).
	UnitSGPUCores = "sgpu-core-units"
)

// BackendAnnotations says which annotations one HAMi device backend uses,
// how they are encoded, and in which units their figures are.
type BackendAnnotations struct {
	// Backend is HAMi's device type of the backend (its common word), the
	// key HAMi books usage under: "NVIDIA", "Ascend910B2", "DCU", ...
	Backend string
	// Vendor is HAMi's package of the backend (pkg/device/<Vendor>).
	Vendor string
	// NodeRegister is the Node annotation the device plugin registers the
	// node's devices in; "" when NodeEncoding is EncodingCapacity.
	NodeRegister string
	// NodeEncoding is how NodeRegister is written.
	NodeEncoding NodeEncoding
	// NodeCapacity names the capacity resources (HAMi's default names)
	// HAMi derives the devices from when NodeEncoding is EncodingCapacity.
	NodeCapacity []string
	// PodAllocated are the Pod annotations the scheduler writes the
	// assignment to in HAMi's per-container format ("UUID,Type,mem,cores:"
	// per device, ';' per container); the first is the one HAMi reads its
	// bookings back from.
	PodAllocated []string
	// PodToAllocate is the copy of the assignment the device plugin
	// consumes (and empties as it allocates); "" when none is written.
	PodToAllocate string
	// VendorPodAnnotations are the other Pod annotations the scheduler
	// writes for the vendor's device plugin (informational).
	VendorPodAnnotations []string
	// Types are the Type strings of the entries in PodAllocated; nil when
	// an entry carries the registered type of its device (AMD).
	Types []string
	// MemoryUnit and CoreUnit are the units of the registered and booked
	// memory and core figures (UnitMiB, UnitPercent, ...).
	MemoryUnit, CoreUnit string
	// FixedCores, when positive, replaces every registered core figure, as
	// HAMi's scheduler does for the backend.
	FixedCores int64
}

// HAMiAnnotations returns the annotations of every HAMi backend, Ascend
// and Iluvatar with the chips of HAMi's default device configuration (see
// AscendAnnotations and IluvatarAnnotations for other chips). The slice is
// fresh on every call.
func HAMiAnnotations() []BackendAnnotations {
	var out []BackendAnnotations
	for _, group := range [][]BackendAnnotations{registeredBackends(), vendorBackends(), capacityBackends()} {
		out = append(out, group...)
	}
	for _, chip := range []string{"MR-V100", "MR-V50", "BI-V150", "BI-V100"} {
		out = append(out, IluvatarAnnotations(chip))
	}
	for _, chip := range []string{"Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4-1", "Ascend910B4", "Ascend310P", "Ascend910C"} {
		out = append(out, AscendAnnotations(chip))
	}
	return out
}

// registeredBackends are the backends whose device plugin registers in one of
// HAMi's generic encodings.
func registeredBackends() []BackendAnnotations {
	return []BackendAnnotations{
		{Backend: "NVIDIA", Vendor: "nvidia", NodeRegister: HAMiNodeRegisterAnnotation, NodeEncoding: EncodingHAMiJSON,
			PodAllocated: []string{PodAllocatedAnnotation}, PodToAllocate: "hami.io/vgpu-devices-to-allocate",
			VendorPodAnnotations: []string{"hami.io/vgpu-mig-allocations"},
			Types:                []string{"NVIDIA"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
		{Backend: "DCU", Vendor: "hygon", NodeRegister: "hami.io/node-dcu-register", NodeEncoding: EncodingHAMiLegacy,
			PodAllocated: []string{"hami.io/dcu-devices-allocated"}, PodToAllocate: "hami.io/dcu-devices-to-allocate",
			Types: []string{"DCU"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
		{Backend: "XPU", Vendor: "kunlun", NodeRegister: "hami.io/node-register-xpu", NodeEncoding: EncodingHAMiJSON,
			PodAllocated: []string{"hami.io/xpu-devices-allocated"}, PodToAllocate: "hami.io/xpu-devices-to-allocate",
			Types: []string{"XPU"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
		{Backend: "AMD", Vendor: "amd", NodeRegister: "hami.io/node-amd-register", NodeEncoding: EncodingHAMiJSON,
			PodAllocated: []string{"hami.io/amd-devices-allocated"}, PodToAllocate: "hami.io/amd-devices-to-allocate",
			MemoryUnit: UnitMiB, CoreUnit: UnitComputeUnits},
		{Backend: "Vastai", Vendor: "vastai", NodeRegister: "hami.io/node-va-register", NodeEncoding: EncodingHAMiJSON,
			PodAllocated: []string{"hami.io/Vastai-devices-allocated"}, PodToAllocate: "hami.io/Vastai-devices-to-allocate",
			Types: []string{"Vastai"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent, FixedCores: 100},
		{Backend: "Biren", Vendor: "biren", NodeRegister: "hami.io/node-biren-register", NodeEncoding: EncodingHAMiJSON,
			PodAllocated: []string{"hami.io/Biren-devices-allocated"}, PodToAllocate: "hami.io/Biren-devices-to-allocate",
			Types: []string{"Biren"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent, FixedCores: 100},
	}
}

// vendorBackends are the backends whose node annotation has the vendor's own
// encoding.
func vendorBackends() []BackendAnnotations {
	return []BackendAnnotations{
		{Backend: "Metax-SGPU", Vendor: "metax", NodeRegister: MetaxSGPURegisterAnnotation, NodeEncoding: EncodingMetaxSGPU,
			PodAllocated: []string{"hami.io/metax-sgpu-devices-allocated"}, PodToAllocate: "hami.io/metax-sgpu-devices-to-allocate",
			VendorPodAnnotations: []string{MetaxSGPUAllocatedAnnotation, "metax-tech.com/predicate-time"},
			Types:                []string{"Metax-SGPU"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
		{Backend: "Enflame", Vendor: "enflame", NodeRegister: EnflameDRSCapacityAnnotation, NodeEncoding: EncodingEnflameDRS,
			PodAllocated: []string{"hami.io/enflame-vgpu-devices-allocated"},
			VendorPodAnnotations: []string{"enflame.com/gcu-assigned", "enflame.com/gcu-assigned-time", "enflame.com/gcu-assigned-index",
				"enflame.com/gcu-assigned-id", "enflame.com/gcu-assigned-minor", "enflame.com/gcu-request-size", "assigned-containers"},
			Types: []string{"Enflame"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
	}
}

// capacityBackends are the backends HAMi derives from node capacity (the
// comments say how its scheduler makes the devices).
func capacityBackends() []BackendAnnotations {
	return []BackendAnnotations{
		// One device per 100 vcore, id "<node>-cambricon-mlu-<i>", memory
		// vmemory capacity × 256 MiB × 100 / vcore capacity.
		{Backend: "MLU", Vendor: "cambricon", NodeEncoding: EncodingCapacity,
			NodeCapacity: []string{"cambricon.com/mlu.smlu.vcore", "cambricon.com/mlu.smlu.vmemory"},
			PodAllocated: []string{"hami.io/cambricon-mlu-devices-allocated"}, PodToAllocate: "hami.io/cambricon-mlu-devices-to-allocate",
			VendorPodAnnotations: []string{"CAMBRICON_DSMLU_PROFILE", "CAMBRICON_DSMLU_ASSIGNED"},
			Types:                []string{"MLU"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
		// One device per unit, id "<node>-metax-<i>", memory a fixed 65536 MiB, count 1.
		{Backend: "Metax-GPU", Vendor: "metax", NodeEncoding: EncodingCapacity, NodeCapacity: []string{"metax-tech.com/gpu"},
			PodAllocated: []string{"hami.io/metax-gpu-devices-allocated"}, PodToAllocate: "hami.io/metax-gpu-devices-to-allocate",
			Types: []string{"Metax-GPU"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
		// One device per unit, id "<node>-GCU-<i>", memory a placeholder 100, count 1.
		{Backend: "GCU", Vendor: "enflame", NodeEncoding: EncodingCapacity, NodeCapacity: []string{"enflame.com/gcu"},
			PodAllocated: []string{"hami.io/enflame-gcu-devices-allocated"}, PodToAllocate: "hami.io/enflame-gcu-devices-to-allocate",
			Types: []string{"GCU"}, MemoryUnit: UnitNone, CoreUnit: UnitPercent},
		// One device per 16 sgpu-core, id "<node>-mthreads-<i>", memory
		// sgpu-memory capacity × 512 MiB × 16 / sgpu-core capacity, cores 16.
		{Backend: "Mthreads", Vendor: "mthreads", NodeEncoding: EncodingCapacity,
			NodeCapacity: []string{"mthreads.com/sgpu-core", "mthreads.com/sgpu-memory"},
			PodAllocated: []string{"hami.io/mthreads-vgpu-devices-allocated"},
			VendorPodAnnotations: []string{"mthreads.com/gpu-index", "mthreads.com/predicate-node", "mthreads.com/predicate-time",
				"mthreads.com/request-gpu-num"},
			Types: []string{"Mthreads"}, MemoryUnit: UnitMiB, CoreUnit: UnitSGPUCores},
		// One device per unit, id "<node>-kunlun-<i>", memory a fixed 98304 MiB, count 100.
		{Backend: "kunlun", Vendor: "kunlun", NodeEncoding: EncodingCapacity, NodeCapacity: []string{"kunlunxin.com/xpu"},
			PodAllocated: []string{"hami.io/kunlun-allocated"}, VendorPodAnnotations: []string{"BAIDU_COM_DEVICE_IDX"},
			Types: []string{"kunlun"}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent},
		// One device per neuron, id "<node>-AWSNeuron-<i>", no memory, count the
		// NeuronCores per device, cores the mask of them.
		{Backend: "AWSNeuron", Vendor: "awsneuron", NodeEncoding: EncodingCapacity,
			NodeCapacity: []string{"aws.amazon.com/neuron", "aws.amazon.com/neuroncore"},
			PodAllocated: []string{"hami.io/aws-neuron-devices-allocated"},
			VendorPodAnnotations: []string{"AWS_NEURON_IDS", "NEURON_ALLOC_TIME", "NEURON_RESOURCE_TYPE", "NEURON_ALLOCATED",
				"aws.amazon.com/predicate-node"},
			Types: []string{"AWSNeuron"}, MemoryUnit: UnitNone, CoreUnit: UnitNeuronCoreMask},
	}
}

// AscendAnnotations returns the annotations of the Ascend chip configured
// with the given commonWord in HAMi's vnpus device configuration.
func AscendAnnotations(commonWord string) BackendAnnotations {
	return BackendAnnotations{Backend: commonWord, Vendor: "ascend",
		NodeRegister: fmt.Sprintf("hami.io/node-register-%s", commonWord), NodeEncoding: EncodingHAMiJSON,
		PodAllocated:         []string{fmt.Sprintf("hami.io/%s-devices-allocated", commonWord)},
		PodToAllocate:        fmt.Sprintf("hami.io/%s-devices-to-allocate", commonWord),
		VendorPodAnnotations: []string{fmt.Sprintf("huawei.com/%s", commonWord), "predicate-time"},
		Types:                []string{commonWord}, MemoryUnit: UnitMiB, CoreUnit: UnitAICores}
}

// IluvatarAnnotations returns the annotations of the Iluvatar chip
// configured with the given commonWord in HAMi's iluvatars device configuration.
func IluvatarAnnotations(commonWord string) BackendAnnotations {
	return BackendAnnotations{Backend: commonWord, Vendor: "iluvatar",
		NodeRegister: fmt.Sprintf("hami.io/node-%s-register", commonWord), NodeEncoding: EncodingHAMiLegacy,
		PodAllocated:  []string{fmt.Sprintf("hami.io/%s-devices-allocated", commonWord)},
		PodToAllocate: fmt.Sprintf("hami.io/%s-devices-to-allocate", commonWord),
		Types:         []string{commonWord}, MemoryUnit: UnitMiB, CoreUnit: UnitPercent}
}
