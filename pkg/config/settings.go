package config

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Settings are how a defaulted configuration's nvidia section reads a
// container's request (the nvidia family).
func Settings(c *Configuration) effective.Family {
	n := c.Devices.Nvidia
	f := effective.Nvidia()
	f.Names = effective.ResourceNames{
		Count:            corev1.ResourceName(*n.ResourceCountName),
		Memory:           corev1.ResourceName(*n.ResourceMemoryName),
		MemoryPercentage: corev1.ResourceName(*n.ResourceMemoryPercentageName),
		Cores:            corev1.ResourceName(*n.ResourceCoreName),
	}
	f.DefaultMemory, f.DefaultCores, f.DefaultGPUNum = *n.DefaultMemory, *n.DefaultCores, *n.DefaultGPUNum
	f.MemoryFactor, f.ExclusiveCores = *n.MemoryFactor, *n.ExclusiveCores
	return f
}

// Families are every device family a defaulted configuration governs: the
// nvidia family first (the one the node agent's capacity describes), then
// the families of every HAMi section present (iluvatars and vnpus only
// when devices.iluvatar.enabled and devices.ascend.enabled are true, as
// HAMi's scheduler starts those backends only when asked), in
// effective.HAMiFamilies' order (a chip HAMiFamilies does not know after the known chips of its
// list), then gpushare. Each starts from its HAMiFamilies default and
// takes the section's keys.
func Families(c *Configuration) []effective.Family {
	gs, _ := governedFamilies(c)
	out := make([]effective.Family, 0, len(gs))
	for _, g := range gs {
		if !g.off {
			out = append(out, g.fam)
		}
	}
	return out
}

// SwitchedOff names the families a defaulted configuration reads but does
// not govern because their section's switch (devices.ascend.enabled,
// devices.iluvatar.enabled) is off: a quota on them is not gpuadmit's.
func SwitchedOff(c *Configuration) []string {
	gs, _ := governedFamilies(c)
	var out []string
	for _, g := range gs {
		if g.off {
			out = append(out, g.fam.Name)
		}
	}
	return out
}

// SwitchedOffWarning is the one-line warning naming SwitchedOff ("" when
// none), for the webhook's start-up and the command line.
func SwitchedOffWarning(c *Configuration) string {
	off := SwitchedOff(c)
	if len(off) == 0 {
		return ""
	}
	return "families read but not governed, as HAMi does not start their backends by default " +
		"(devices.ascend.enabled, devices.iluvatar.enabled are false; a quota on them is not enforced): " + strings.Join(off, ", ")
}

// switched marks the families of a section its switch leaves off (they
// are checked as the others, not governed).
func switched(gs []governed, sw *configv1alpha1.BackendSwitch) []governed {
	for i := range gs {
		gs[i].off = !sw.IsEnabled()
	}
	return gs
}

// governed is one family a configuration governs, and where it is set.
type governed struct {
	fam effective.Family
	// path is the section's key path ("devices.cambricon",
	// "devices.vnpus[910B2]").
	path string
	// keys are the section's keys of the family's count, memory,
	// memory percentage and core names ("": the family has none).
	keys [4]string
	// off: the section's switch (devices.ascend, devices.iluvatar) is
	// off; the family is checked, not governed.
	off bool
}

// nvidiaKeys are the keys of the nvidia section's names.
func nvidiaKeys() [4]string {
	return [4]string{"resourceCountName", "resourceMemoryName", "resourceMemoryPercentageName", "resourceCoreName"}
}

// sharedKeys are the keys of a section named like HAMi's common rule.
func sharedKeys() [4]string {
	return [4]string{"resourceCountName", "resourceMemoryName", "", "resourceCoreName"}
}

// hamiDefaults are effective.HAMiFamilies by name and by section (the
// first family of a section).
type hamiDefaults struct {
	order             []effective.Family
	byName, bySection map[string]effective.Family
}

func newHAMiDefaults() hamiDefaults {
	h := hamiDefaults{order: effective.HAMiFamilies(), byName: map[string]effective.Family{}, bySection: map[string]effective.Family{}}
	for _, f := range h.order {
		h.byName[f.Name] = f
		if _, dup := h.bySection[f.Section]; !dup {
			h.bySection[f.Section] = f
		}
	}
	return h
}

// rank is the position of the family named name in HAMiFamilies (-1: none).
func (h hamiDefaults) rank(name string) int {
	return slices.IndexFunc(h.order, func(f effective.Family) bool { return f.Name == name })
}

// governedFamilies builds every family of a present section (those a
// switch leaves off marked off); the errors are those of
// the chips it cannot build and of their list entries.
func governedFamilies(c *Configuration) ([]governed, field.ErrorList) {
	d, h := c.Devices, newHAMiDefaults()
	out := []governed{{fam: Settings(c), path: "devices.nvidia", keys: nvidiaKeys()}}
	if d.Cambricon != nil {
		out = append(out, named(h.byName["cambricon"], "devices.cambricon", d.Cambricon))
	}
	if s := d.Hygon; s != nil {
		g := named(h.byName["hygon"], "devices.hygon", &configv1alpha1.NamedDevices{
			ResourceCountName: s.ResourceCountName, ResourceMemoryName: s.ResourceMemoryName, ResourceCoreName: s.ResourceCoreName})
		g.fam.MemoryFactor = num(s.MemoryFactor, g.fam.MemoryFactor)
		out = append(out, g)
	}
	if s := d.Metax; s != nil {
		gpu, sgpu := h.byName["metax"], h.byName["metax-sgpu"]
		gpu.Names.Count = name(s.ResourceCountName, gpu.Names.Count)
		sgpu.Names = effective.ResourceNames{Count: name(s.ResourceVCountName, sgpu.Names.Count),
			Memory: name(s.ResourceVMemoryName, sgpu.Names.Memory), Cores: name(s.ResourceVCoreName, sgpu.Names.Cores)}
		out = append(out, governed{fam: gpu, path: "devices.metax", keys: [4]string{"resourceCountName"}},
			governed{fam: sgpu, path: "devices.metax", keys: [4]string{"resourceVCountName", "resourceVMemoryName", "", "resourceVCoreName"}})
	}
	if s := d.Enflame; s != nil {
		drs, gcu := h.byName["enflame"], h.byName["enflame-gcu"]
		drs.Names = effective.ResourceNames{Count: name(s.ResourceNameDRSGCU, drs.Names.Count),
			Memory: name(s.ResourceNameGCUMemory, drs.Names.Memory), Cores: name(s.ResourceNameGCUCore, drs.Names.Cores)}
		gcu.Names.Count = name(s.ResourceNameGCU, gcu.Names.Count)
		out = append(out, governed{fam: drs, path: "devices.enflame", keys: [4]string{"resourceNameDRSGCU", "resourceNameGCUMemory", "", "resourceNameGCUCore"}},
			governed{fam: gcu, path: "devices.enflame", keys: [4]string{"resourceNameGCU"}})
	}
	if d.Mthreads != nil {
		out = append(out, named(h.byName["mthreads"], "devices.mthreads", d.Mthreads))
	}
	ilu, errs := iluvatarFamilies(d.Iluvatars, h)
	out = append(out, switched(ilu, d.Iluvatar)...)
	out = append(out, laterFamilies(d, h)...)
	asc, more := vnpuFamilies(d.VNPUs, h)
	out = append(out, switched(asc, d.Ascend)...)
	if d.Gpushare != nil {
		f := effective.Gpushare()
		if u := d.Gpushare.MemoryUnit; u != nil && *u == configv1alpha1.MemoryUnitMiB {
			f.MemoryFactor = 1
		}
		out = append(out, governed{fam: f, path: "devices.gpushare"})
	}
	return out, append(errs, more...)
}

// laterFamilies are the families of kunlun, awsneuron, amd, vastai and biren.
func laterFamilies(d *configv1alpha1.Devices, h hamiDefaults) []governed {
	var out []governed
	if s := d.Kunlun; s != nil {
		xpu, vxpu := h.byName["kunlun"], h.byName["kunlun-vxpu"]
		xpu.Names.Count = name(s.ResourceCountName, xpu.Names.Count)
		vxpu.Names.Count, vxpu.Names.Memory = name(s.ResourceVCountName, vxpu.Names.Count), name(s.ResourceVMemoryName, vxpu.Names.Memory)
		out = append(out, governed{fam: xpu, path: "devices.kunlun", keys: [4]string{"resourceCountName"}},
			governed{fam: vxpu, path: "devices.kunlun", keys: [4]string{"resourceVCountName", "resourceVMemoryName"}})
	}
	if s := d.AWSNeuron; s != nil {
		f := h.byName["awsneuron"]
		f.Names.Count, f.Names.Cores = name(s.ResourceCountName, f.Names.Count), name(s.ResourceCoreName, f.Names.Cores)
		out = append(out, governed{fam: f, path: "devices.awsneuron", keys: [4]string{"resourceCountName", "", "", "resourceCoreName"}})
	}
	if d.AMD != nil {
		out = append(out, named(h.byName["amd"], "devices.amd", d.AMD))
	}
	for _, s := range []struct {
		sec *configv1alpha1.CountDevices
		fam string
	}{{d.Vastai, "vastai"}, {d.Biren, "biren"}} {
		if s.sec != nil {
			f := h.byName[s.fam]
			f.Names.Count = name(s.sec.ResourceCountName, f.Names.Count)
			out = append(out, governed{fam: f, path: "devices." + s.fam, keys: [4]string{"resourceCountName"}})
		}
	}
	return out
}

// named is the family of a section of three names.
func named(f effective.Family, path string, s *configv1alpha1.NamedDevices) governed {
	f.Names.Count = name(s.ResourceCountName, f.Names.Count)
	f.Names.Memory = name(s.ResourceMemoryName, f.Names.Memory)
	f.Names.Cores = name(s.ResourceCoreName, f.Names.Cores)
	return governed{fam: f, path: path, keys: sharedKeys()}
}

func name(p *string, def corev1.ResourceName) corev1.ResourceName {
	if p == nil {
		return def
	}
	return corev1.ResourceName(*p)
}

func num(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}
