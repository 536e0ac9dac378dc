package effective

import corev1 "k8s.io/api/core/v1"

// ascendChip is one entry of the chart's vnpus.configs: chip name, common
// word (the device type and the annotation names), the memory a whole
// device books (memoryAllocatable) and accepts (memoryCapacity), and the
// vNPU templates (their memory; the AI cores a template gives are not
// booked: HAMi books the -core request, which hard splitting keeps at 0).
type ascendChip struct {
	chip, word            string
	allocatable, capacity int64
	factor                int64
	pairs                 bool
	templates             []Template
}

// ascendChips are the chart's vnpus.configs, in order.
func ascendChips() []ascendChip {
	return []ascendChip{
		{chip: "910A", word: "Ascend910A", allocatable: 32768, capacity: 32768, factor: 1,
			templates: []Template{{"vir02", 2184, 0}, {"vir04", 4369, 0}, {"vir08", 8738, 0}, {"vir16", 17476, 0}}},
		{chip: "910B2", word: "Ascend910B2", allocatable: 65536, capacity: 65536, factor: 1,
			templates: []Template{{"vir03_1c_8g", 8192, 0}, {"vir06_1c_16g", 16384, 0}, {"vir12_3c_32g", 32768, 0}}},
		{chip: "910B3", word: "Ascend910B3", allocatable: 65536, capacity: 65536, factor: 1,
			templates: []Template{{"vir05_1c_16g", 16384, 0}, {"vir10_3c_32g", 32768, 0}}},
		{chip: "910B4-1", word: "Ascend910B4-1", allocatable: 65536, capacity: 65536, factor: 1,
			templates: []Template{{"vir05_1c_16g", 16384, 0}, {"vir10_3c_32g", 32768, 0}}},
		{chip: "910B4", word: "Ascend910B4", allocatable: 32768, capacity: 32768, factor: 1,
			templates: []Template{{"vir05_1c_8g", 8192, 0}, {"vir10_3c_16g", 16384, 0}}},
		{chip: "310P3", word: "Ascend310P", allocatable: 21527, capacity: 24576, factor: 1,
			templates: []Template{{"vir01", 3072, 0}, {"vir02", 6144, 0}, {"vir04", 12288, 0}}},
		// The chart's chip name of the 910C is "Ascend910"; the family is
		// named after its common word. The chart sets no memoryFactor (1)
		// and makes it a super pod (devices in pairs).
		{chip: "Ascend910", word: "Ascend910C", allocatable: 65536, capacity: 65536, pairs: true,
			templates: []Template{{"vir05_1c_16g", 16384, 0}, {"vir10_3c_32g", 32768, 0}}},
	}
}

// ascendFamilies are the Ascend families, one per chip of the chart.
func ascendFamilies() []Family {
	chips := ascendChips()
	out := make([]Family, 0, len(chips))
	for _, c := range chips {
		out = append(out, c.family())
	}
	return out
}

// family is the chip's family: "ascend-" and the chip name (the 910C: its
// common word's "910C").
func (c ascendChip) family() Family {
	name := "ascend-" + c.chip
	if c.word == "Ascend910C" {
		name = "ascend-910C"
	}
	res := "huawei.com/" + c.word
	f := Family{
		Name: name, Section: "vnpus[" + c.chip + "]", Rule: RuleTemplates,
		Names: ResourceNames{Count: corev1.ResourceName(res), Memory: corev1.ResourceName(res + "-memory"),
			Cores: corev1.ResourceName(res + "-core")},
		NoPercentage:   true,
		MemoryFactor:   c.factor,
		Whole:          Template{MemMiB: c.allocatable},
		MemoryCapacity: c.capacity,
		SingleSplit:    true,
		SoftSplit:      true,
		DevicePairs:    c.pairs,
		RegisterAnno:   "hami.io/node-register-" + c.word,
		AllocAnno:      "hami.io/" + c.word + "-devices-allocated",
		DeviceType:     c.word,
	}
	copy(f.Templates[:], c.templates)
	return f
}
