package v1alpha1

// The sections of HAMi's device config other than nvidia, as HAMi's chart
// renders them (charts/hami/templates/scheduler/device-configmap.yaml).
// Only the keys a family's booking rule reads are typed; HAMi's other keys
// of a section (sgpuTopologyAware, runtimeClassName, overwriteEnv,
// hamiVnpuCore, ...) are listed in Devices.Ignored. A section that is
// present (even empty) governs its families, each key it leaves out at the
// default of effective.HAMiFamilies.

// NamedDevices are the three resource names of a section that has nothing
// else gpuadmit reads (cambricon, mthreads, amd).
type NamedDevices struct {
	ResourceCountName  *string `json:"resourceCountName,omitempty"`
	ResourceMemoryName *string `json:"resourceMemoryName,omitempty"`
	ResourceCoreName   *string `json:"resourceCoreName,omitempty"`
}

// HygonDevices are the keys of HAMi's hygon section gpuadmit reads.
type HygonDevices struct {
	ResourceCountName  *string `json:"resourceCountName,omitempty"`
	ResourceMemoryName *string `json:"resourceMemoryName,omitempty"`
	ResourceCoreName   *string `json:"resourceCoreName,omitempty"`
	// MemoryFactor multiplies a dcumem request (default 1).
	MemoryFactor *int64 `json:"memoryFactor,omitempty"`
}

// CountDevices is the one resource name of a whole-device section (vastai,
// biren).
type CountDevices struct {
	ResourceCountName *string `json:"resourceCountName,omitempty"`
}

// MetaxDevices are HAMi's metax section: the whole GPU (resourceCountName)
// and the sGPU (the resourceV* names), two families.
type MetaxDevices struct {
	ResourceCountName   *string `json:"resourceCountName,omitempty"`
	ResourceVCountName  *string `json:"resourceVCountName,omitempty"`
	ResourceVMemoryName *string `json:"resourceVMemoryName,omitempty"`
	ResourceVCoreName   *string `json:"resourceVCoreName,omitempty"`
}

// EnflameDevices are HAMi's enflame section: the whole GCU and the DRS
// vGCU, two families.
type EnflameDevices struct {
	ResourceNameGCU       *string `json:"resourceNameGCU,omitempty"`
	ResourceNameDRSGCU    *string `json:"resourceNameDRSGCU,omitempty"`
	ResourceNameGCUMemory *string `json:"resourceNameGCUMemory,omitempty"`
	ResourceNameGCUCore   *string `json:"resourceNameGCUCore,omitempty"`
}

// KunlunDevices are HAMi's kunlun section: the whole XPU and the vXPU, two
// families.
type KunlunDevices struct {
	ResourceCountName   *string `json:"resourceCountName,omitempty"`
	ResourceVCountName  *string `json:"resourceVCountName,omitempty"`
	ResourceVMemoryName *string `json:"resourceVMemoryName,omitempty"`
}

// BackendSwitch switches on a HAMi backend its scheduler starts only on
// request. Enabled is read strictly (true or false); the other keys of
// HAMi's chart values there (image, customresources, ...) and of an older
// HAMi release's single iluvatar section are ignored and reported.
type BackendSwitch struct {
	// Enabled governs the backend's families (default false, HAMi's).
	Enabled *bool `json:"enabled,omitempty"`
}

// IsEnabled reports whether s switches its backend on (nil: off).
func (s *BackendSwitch) IsEnabled() bool { return s != nil && s.Enabled != nil && *s.Enabled }

// AWSNeuronDevices are HAMi's awsneuron section.
type AWSNeuronDevices struct {
	ResourceCountName *string `json:"resourceCountName,omitempty"`
	ResourceCoreName  *string `json:"resourceCoreName,omitempty"`
}

// IluvatarDevices is one entry of HAMi's iluvatars list, one family per
// chip. A chip effective.HAMiFamilies does not know needs commonWord and
// the three names.
type IluvatarDevices struct {
	ChipName *string `json:"chipName,omitempty"`
	// CommonWord names the chip's annotations and device type.
	CommonWord         *string `json:"commonWord,omitempty"`
	ResourceCountName  *string `json:"resourceCountName,omitempty"`
	ResourceMemoryName *string `json:"resourceMemoryName,omitempty"`
	ResourceCoreName   *string `json:"resourceCoreName,omitempty"`
}

// VNPUDevices is HAMi's vnpus section: its configs list, one Ascend family
// per chip. The list alone (the form of older HAMi releases) is read too.
type VNPUDevices struct {
	Configs []VNPUConfig `json:"configs,omitempty"`
}

// VNPUConfig is one Ascend chip of vnpus.configs. A chip
// effective.HAMiFamilies does not know needs commonWord, resourceName,
// resourceMemoryName, memoryAllocatable and memoryCapacity (no
// resourceCoreName: the chip has no core resource, as in HAMi).
type VNPUConfig struct {
	ChipName           *string `json:"chipName,omitempty"`
	CommonWord         *string `json:"commonWord,omitempty"`
	ResourceName       *string `json:"resourceName,omitempty"`
	ResourceMemoryName *string `json:"resourceMemoryName,omitempty"`
	ResourceCoreName   *string `json:"resourceCoreName,omitempty"`
	// MemoryAllocatable (MiB) is what a whole NPU books; MemoryCapacity the
	// most memory a request may name.
	MemoryAllocatable *int64 `json:"memoryAllocatable,omitempty"`
	MemoryCapacity    *int64 `json:"memoryCapacity,omitempty"`
	// MemoryFactor multiplies a memory request (0 or 1: none).
	MemoryFactor *int64 `json:"memoryFactor,omitempty"`
	// AICore and AICPU are typed but not booked (HAMi books the -core
	// request, which hard splitting keeps at 0).
	AICore *int64 `json:"aiCore,omitempty"`
	AICPU  *int64 `json:"aiCPU,omitempty"`
	// SuperPod: the 910C's NPUs come in pairs.
	SuperPod *bool `json:"superPod,omitempty"`
	// Templates are the vNPU sizes, by ascending memory (at most 8); empty:
	// the chip's defaults.
	Templates []VNPUTemplate `json:"templates,omitempty"`
}

// VNPUTemplate is one vNPU size of a chip.
type VNPUTemplate struct {
	Name *string `json:"name,omitempty"`
	// Memory is the template's memory in MiB (memory-resource units).
	Memory *int64 `json:"memory,omitempty"`
	AICore *int64 `json:"aiCore,omitempty"`
	AICPU  *int64 `json:"aiCPU,omitempty"`
}

// GpushareDevices is gpuadmit's own section for Aliyun's gpushare (not a
// HAMi backend): present, it governs aliyun.com/gpu-mem and
// aliyun.com/gpu-count.
type GpushareDevices struct {
	// MemoryUnit is the unit of aliyun.com/gpu-mem, the device plugin's
	// --memory-unit: GiB (default) or MiB.
	MemoryUnit *MemoryUnit `json:"memoryUnit,omitempty"`
}

// MemoryUnit is GpushareDevices.MemoryUnit.
type MemoryUnit string

// Values of GpushareDevices.MemoryUnit.
const (
	MemoryUnitGiB MemoryUnit = "GiB"
	MemoryUnitMiB MemoryUnit = "MiB"
)
