package config

import (
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// setDefaultsSections sets the unset keys of every present HAMi section to
// the default of its family in effective.HAMiFamilies (a chip of vnpus or
// iluvatars that HAMiFamilies does not know keeps its keys unset),
// gpushare's memory unit to GiB, and the Ascend and Iluvatar switches off.
func setDefaultsSections(d *configv1alpha1.Devices) {
	bySection := map[string]effective.Family{}
	byName := map[string]effective.Family{}
	for _, f := range effective.HAMiFamilies() {
		byName[f.Name] = f
		if _, dup := bySection[f.Section]; !dup {
			bySection[f.Section] = f
		}
	}
	setDefaultsNamed(d.Cambricon, byName["cambricon"])
	if h := d.Hygon; h != nil {
		f := byName["hygon"]
		setDefaultName(&h.ResourceCountName, f.Names.Count)
		setDefaultName(&h.ResourceMemoryName, f.Names.Memory)
		setDefaultName(&h.ResourceCoreName, f.Names.Cores)
		setDefault(&h.MemoryFactor, f.MemoryFactor)
	}
	if m := d.Metax; m != nil {
		setDefaultName(&m.ResourceCountName, byName["metax"].Names.Count)
		s := byName["metax-sgpu"].Names
		setDefaultName(&m.ResourceVCountName, s.Count)
		setDefaultName(&m.ResourceVMemoryName, s.Memory)
		setDefaultName(&m.ResourceVCoreName, s.Cores)
	}
	if e := d.Enflame; e != nil {
		setDefaultName(&e.ResourceNameGCU, byName["enflame-gcu"].Names.Count)
		s := byName["enflame"].Names
		setDefaultName(&e.ResourceNameDRSGCU, s.Count)
		setDefaultName(&e.ResourceNameGCUMemory, s.Memory)
		setDefaultName(&e.ResourceNameGCUCore, s.Cores)
	}
	setDefaultsNamed(d.Mthreads, byName["mthreads"])
	setDefaultsRest(d, byName, bySection)
	// HAMi's scheduler starts Ascend and Iluvatar only when asked
	// (--enable-ascend, --enable-iluvatar: its chart's default is off).
	d.Ascend, d.Iluvatar = orNew(d.Ascend), orNew(d.Iluvatar)
	setDefault(&d.Ascend.Enabled, false)
	setDefault(&d.Iluvatar.Enabled, false)
}

// setDefaultsRest defaults the sections after mthreads, in the chart's order.
func setDefaultsRest(d *configv1alpha1.Devices, byName, bySection map[string]effective.Family) {
	for i := range d.Iluvatars {
		setDefaultsIluvatar(&d.Iluvatars[i], bySection)
	}
	if k := d.Kunlun; k != nil {
		setDefaultName(&k.ResourceCountName, byName["kunlun"].Names.Count)
		v := byName["kunlun-vxpu"].Names
		setDefaultName(&k.ResourceVCountName, v.Count)
		setDefaultName(&k.ResourceVMemoryName, v.Memory)
	}
	if a := d.AWSNeuron; a != nil {
		n := byName["awsneuron"].Names
		setDefaultName(&a.ResourceCountName, n.Count)
		setDefaultName(&a.ResourceCoreName, n.Cores)
	}
	setDefaultsNamed(d.AMD, byName["amd"])
	setDefaultsCount(d.Vastai, byName["vastai"])
	setDefaultsCount(d.Biren, byName["biren"])
	if d.VNPUs != nil {
		for i := range d.VNPUs.Configs {
			setDefaultsVNPU(&d.VNPUs.Configs[i], bySection)
		}
	}
	if d.Gpushare != nil {
		setDefault(&d.Gpushare.MemoryUnit, configv1alpha1.MemoryUnitGiB)
	}
}

func setDefaultsNamed(n *configv1alpha1.NamedDevices, f effective.Family) {
	if n == nil {
		return
	}
	setDefaultName(&n.ResourceCountName, f.Names.Count)
	setDefaultName(&n.ResourceMemoryName, f.Names.Memory)
	setDefaultName(&n.ResourceCoreName, f.Names.Cores)
}

func setDefaultsCount(c *configv1alpha1.CountDevices, f effective.Family) {
	if c != nil {
		setDefaultName(&c.ResourceCountName, f.Names.Count)
	}
}

// setDefaultsIluvatar defaults a chip HAMiFamilies knows.
func setDefaultsIluvatar(c *configv1alpha1.IluvatarDevices, bySection map[string]effective.Family) {
	if c.ChipName == nil {
		return
	}
	f, known := bySection["iluvatars["+*c.ChipName+"]"]
	if !known {
		return
	}
	setDefault(&c.CommonWord, f.DeviceType)
	setDefaultName(&c.ResourceCountName, f.Names.Count)
	setDefaultName(&c.ResourceMemoryName, f.Names.Memory)
	setDefaultName(&c.ResourceCoreName, f.Names.Cores)
}

// setDefaultsVNPU defaults a chip HAMiFamilies knows.
func setDefaultsVNPU(c *configv1alpha1.VNPUConfig, bySection map[string]effective.Family) {
	if c.ChipName == nil {
		return
	}
	f, known := bySection["vnpus["+*c.ChipName+"]"]
	if !known {
		return
	}
	setDefault(&c.CommonWord, f.DeviceType)
	setDefaultName(&c.ResourceName, f.Names.Count)
	setDefaultName(&c.ResourceMemoryName, f.Names.Memory)
	setDefaultName(&c.ResourceCoreName, f.Names.Cores)
	setDefault(&c.MemoryAllocatable, f.Whole.MemMiB)
	setDefault(&c.MemoryCapacity, f.MemoryCapacity)
	setDefault(&c.MemoryFactor, f.MemoryFactor)
	setDefault(&c.SuperPod, f.DevicePairs)
	if len(c.Templates) > 0 {
		return
	}
	c.Templates = nil
	for _, t := range f.Templates {
		if t.MemMiB > 0 {
			c.Templates = append(c.Templates, configv1alpha1.VNPUTemplate{Name: ptr.To(t.Name), Memory: ptr.To(t.MemMiB)})
		}
	}
}

func setDefaultName[T ~string](field **string, def T) { setDefault(field, string(def)) }
