package effective

import corev1 "k8s.io/api/core/v1"

// HAMiFamilies returns every device backend of HAMi with the defaults its
// default Helm chart renders (resource names from the chart's values, the
// rest from each backend's code), in the order of the chart's device
// configuration: NVIDIA first (equal to Nvidia()), then Cambricon, Hygon,
// Metax (GPU, sGPU), Enflame (DRS, GCU), Moore Threads, the Iluvatar chips,
// Kunlun (XPU, vXPU), AWS Neuron, AMD, Vastai, Biren and the Ascend chips.
func HAMiFamilies() []Family {
	fams := []Family{Nvidia(), cambricon(), hygon(), metaxGPU(), metaxSGPU(), enflameDRS(), enflameGCU(), mthreads()}
	for _, chip := range []string{"MR-V100", "MR-V50", "BI-V150", "BI-V100"} {
		fams = append(fams, iluvatar(chip))
	}
	fams = append(fams, kunlunXPU(), kunlunVXPU(), awsNeuron(), amd(), vastai(), biren())
	return append(fams, ascendFamilies()...)
}

// Gpushare returns Aliyun's gpushare (gpushare-scheduler-extender and
// gpushare-device-plugin): aliyun.com/gpu-mem in GiB, the device plugin's
// default unit (set MemoryFactor to 1 for one run with --memory-unit=MiB),
// on one shared device per container. It is its own system, not a HAMi
// backend.
func Gpushare() Family {
	return Family{
		Name: "gpushare", Section: "gpushare", Rule: RuleGpushare,
		Names:        ResourceNames{Count: "aliyun.com/gpu-count", Memory: "aliyun.com/gpu-mem"},
		NoPercentage: true, NoCores: true,
		MemoryFactor: 1024,
		AllocAnno:    "ALIYUN_COM_GPU_MEM_IDX",
	}
}

// shareNames are the names of a RuleShare backend without a percentage.
func shareNames(count, mem, cores corev1.ResourceName) ResourceNames {
	return ResourceNames{Count: count, Memory: mem, Cores: cores}
}

func cambricon() Family {
	return Family{
		Name: "cambricon", Section: "cambricon",
		Names:        shareNames("cambricon.com/vmlu", "cambricon.com/mlu.smlu.vmemory", "cambricon.com/mlu.smlu.vcore"),
		NoPercentage: true,
		DefaultCores: 100,
		MemoryFactor: 256, // one vmemory unit is 256 MiB
		AllocAnno:    "hami.io/cambricon-mlu-devices-allocated",
		DeviceType:   "MLU",
	}
}

func hygon() Family {
	return Family{
		Name: "hygon", Section: "hygon",
		Names:        shareNames("hygon.com/dcunum", "hygon.com/dcumem", "hygon.com/dcucores"),
		NoPercentage: true,
		DefaultCores: 100,
		MemoryFactor: 1,
		RegisterAnno: "hami.io/node-dcu-register",
		AllocAnno:    "hami.io/dcu-devices-allocated",
		DeviceType:   "DCU",
	}
}

func metaxGPU() Family {
	return Family{
		Name: "metax", Section: "metax", Rule: RuleWhole,
		Names:    ResourceNames{Count: "metax-tech.com/gpu"},
		NoMemory: true, NoPercentage: true, NoCores: true,
		Whole:      Template{MemMiB: 65536, Cores: 100}, // HAMi registers every Metax GPU with 65536 MiB
		AllocAnno:  "hami.io/metax-gpu-devices-allocated",
		DeviceType: "Metax-GPU",
	}
}

func metaxSGPU() Family {
	return Family{
		Name: "metax-sgpu", Section: "metax",
		Names:        shareNames("metax-tech.com/sgpu", "metax-tech.com/vmemory", "metax-tech.com/vcore"),
		NoPercentage: true,
		DefaultCores: 100,
		MemoryFactor: 1024, // a plain number is GiB
		ByteMemory:   true,
		RegisterAnno: "metax-tech.com/node-gpu-devices",
		AllocAnno:    "hami.io/metax-sgpu-devices-allocated",
		DeviceType:   "Metax-SGPU",
	}
}

func enflameDRS() Family {
	return Family{
		Name: "enflame", Section: "enflame", Rule: RuleProfiles,
		Names:        shareNames("enflame.com/drs-gcu", "enflame.com/gcu-memory", "enflame.com/gcu-core"),
		NoPercentage: true,
		RegisterAnno: "enflame.com/gcu-drs-capacity",
		AllocAnno:    "hami.io/enflame-vgpu-devices-allocated",
		DeviceType:   "Enflame",
	}
}

func enflameGCU() Family {
	return Family{
		Name: "enflame-gcu", Section: "enflame", Rule: RuleWhole,
		Names:    ResourceNames{Count: "enflame.com/gcu"},
		NoMemory: true, NoPercentage: true, NoCores: true,
		Whole:      Template{MemMiB: 100, Cores: 100}, // HAMi registers every GCU with a nominal 100
		AllocAnno:  "hami.io/enflame-gcu-devices-allocated",
		DeviceType: "GCU",
	}
}

func mthreads() Family {
	f := Family{
		Name: "mthreads", Section: "mthreads", Rule: RuleSlices,
		Names:        shareNames("mthreads.com/vgpu", "mthreads.com/sgpu-memory", "mthreads.com/sgpu-core"),
		NoPercentage: true,
		MemoryFactor: 512, // one sgpu-memory unit is 512 MiB
		CoreUnits:    16,
		Whole:        Template{MemMiB: 96 * 512, Cores: 16},
		AllocAnno:    "hami.io/mthreads-vgpu-devices-allocated",
		DeviceType:   "Mthreads",
	}
	for i, units := range []int64{2, 4, 8, 16, 32, 64, 96} {
		f.Templates[i] = Template{MemMiB: units * 512}
	}
	return f
}

func iluvatar(chip string) Family {
	return Family{
		Name: "iluvatar-" + chip, Section: "iluvatars[" + chip + "]",
		Names: shareNames(corev1.ResourceName("iluvatar.ai/"+chip+"-vgpu"), corev1.ResourceName("iluvatar.ai/"+chip+".vMem"),
			corev1.ResourceName("iluvatar.ai/"+chip+".vCore")),
		NoPercentage: true,
		MemoryFactor: 256, // one vMem unit is 256 MiB
		MultiCores:   true,
		RegisterAnno: "hami.io/node-" + chip + "-register",
		AllocAnno:    "hami.io/" + chip + "-devices-allocated",
		DeviceType:   chip,
	}
}

func kunlunXPU() Family {
	return Family{
		Name: "kunlun", Section: "kunlun", Rule: RuleWhole,
		Names:    ResourceNames{Count: "kunlunxin.com/xpu"},
		NoMemory: true, NoPercentage: true, NoCores: true,
		Whole:      Template{MemMiB: 98304, Cores: 100}, // HAMi registers every XPU with 98304 MiB
		AllocAnno:  "hami.io/kunlun-allocated",
		DeviceType: "kunlun",
	}
}

func kunlunVXPU() Family {
	f := Family{
		Name: "kunlun-vxpu", Section: "kunlun", Rule: RuleTemplates,
		Names:        ResourceNames{Count: "kunlunxin.com/vxpu", Memory: "kunlunxin.com/vxpu-memory"},
		NoPercentage: true, NoCores: true,
		Whole:          Template{MemMiB: 98304, Cores: 100},
		MemoryCapacity: 98304,
		RegisterAnno:   "hami.io/node-register-xpu",
		AllocAnno:      "hami.io/xpu-devices-allocated",
		DeviceType:     "XPU",
	}
	f.Templates[0] = Template{MemMiB: 24576, Cores: 25} // a quarter, a half: cores follow memory
	f.Templates[1] = Template{MemMiB: 49152, Cores: 50}
	return f
}

func awsNeuron() Family {
	return Family{
		Name: "awsneuron", Section: "awsneuron", Rule: RuleCoreSplit,
		Names:    ResourceNames{Count: "aws.amazon.com/neuron", Cores: "aws.amazon.com/neuroncore"},
		NoMemory: true, NoPercentage: true,
		CoreUnits:  2, // HAMi's cap on NeuronCores per device
		AllocAnno:  "hami.io/aws-neuron-devices-allocated",
		DeviceType: "AWSNeuron",
	}
}

func amd() Family {
	return Family{
		Name: "amd", Section: "amd",
		Names:        shareNames("amd.com/gpu", "amd.com/gpumem", "amd.com/gpucores"),
		NoPercentage: true,
		DefaultCores: 100,
		MinCores:     1,
		MemoryFactor: 1,
		RegisterAnno: "hami.io/node-amd-register",
		AllocAnno:    "hami.io/amd-devices-allocated",
	}
}

func vastai() Family {
	return Family{
		Name: "vastai", Section: "vastai", Rule: RuleWhole,
		Names:    ResourceNames{Count: "vastaitech.com/va"},
		NoMemory: true, NoPercentage: true, NoCores: true,
		RegisterAnno: "hami.io/node-va-register",
		AllocAnno:    "hami.io/Vastai-devices-allocated",
		DeviceType:   "Vastai",
	}
}

func biren() Family {
	return Family{
		Name: "biren", Section: "biren", Rule: RuleWhole,
		Names:    ResourceNames{Count: "birentech.com/gpu"},
		NoMemory: true, NoPercentage: true, NoCores: true,
		RegisterAnno: "hami.io/node-biren-register",
		AllocAnno:    "hami.io/Biren-devices-allocated",
		DeviceType:   "Biren",
	}
}
