package config

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// The chips of HAMi's lists (iluvatars, vnpus.configs): one family each. A
// chip effective.HAMiFamilies knows (by its section, iluvatars[MR-V100],
// vnpus[910B2]) starts from that family; another chip is built from the
// entry's own keys when it has every key the family's rule needs, and is an
// error naming the missing key otherwise (a chip HAMi schedules but
// gpuadmit cannot count would escape every quota).

const unknownChip = "needed for a chip effective.HAMiFamilies does not know"

// chip is one list entry: its path, chip name and whether it is known.
type chip struct {
	path  *field.Path
	name  string
	base  effective.Family
	known bool
	rank  int
}

// chips names the entries of a list at path (their chipName, else their
// index), finds their HAMiFamilies default, and reports entries without a
// chip name and chip names listed twice.
func chips(h hamiDefaults, list string, names []*string) ([]chip, field.ErrorList) {
	var errs field.ErrorList
	out := make([]chip, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		c := chip{path: field.NewPath(fmt.Sprintf("devices.%s[%d]", list, i)), rank: len(h.order) + i}
		switch {
		case n == nil || *n == "":
			errs = append(errs, field.Required(c.path.Child("chipName"), "every entry of "+list+" names its chip"))
		case seen[*n]:
			c.name, c.path = *n, field.NewPath("devices."+list+"["+*n+"]")
			errs = append(errs, field.Duplicate(c.path.Child("chipName"), *n))
		default:
			c.name, c.path = *n, field.NewPath("devices."+list+"["+*n+"]")
			seen[*n] = true
			c.base, c.known = h.bySection[list+"["+*n+"]"]
			if c.known {
				c.rank = h.rank(c.base.Name)
			}
		}
		out[i] = c
	}
	return out, errs
}

// byRank orders built chips: known ones in HAMiFamilies' order, then the
// others in the list's.
func byRank(gs []governed, ranks []int) []governed {
	idx := make([]int, len(gs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return ranks[a] - ranks[b] })
	out := make([]governed, len(gs))
	for i, j := range idx {
		out[i] = gs[j]
	}
	return out
}

// required reports the keys a chip gpuadmit does not know leaves unset.
func required(c chip, keys map[string]bool) field.ErrorList {
	if c.known {
		return nil
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(keys) {
		if !keys[k] {
			errs = append(errs, field.Required(c.path.Child(k), unknownChip))
		}
	}
	return errs
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// iluvatarFamilies are the families of the iluvatars list.
func iluvatarFamilies(list []configv1alpha1.IluvatarDevices, h hamiDefaults) ([]governed, field.ErrorList) {
	names := make([]*string, len(list))
	for i := range list {
		names[i] = list[i].ChipName
	}
	cs, errs := chips(h, "iluvatars", names)
	var out []governed
	var ranks []int
	for i, c := range cs {
		if c.name == "" {
			continue
		}
		s := &list[i]
		if e := required(c, map[string]bool{"commonWord": s.CommonWord != nil, "resourceCountName": s.ResourceCountName != nil,
			"resourceMemoryName": s.ResourceMemoryName != nil, "resourceCoreName": s.ResourceCoreName != nil}); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		f := c.base
		if !c.known {
			f = h.bySection["iluvatars[MR-V100]"] // the rule every Iluvatar chip shares
			f.Name, f.Section = "iluvatar-"+c.name, "iluvatars["+c.name+"]"
		}
		f.Names = effective.ResourceNames{Count: name(s.ResourceCountName, f.Names.Count),
			Memory: name(s.ResourceMemoryName, f.Names.Memory), Cores: name(s.ResourceCoreName, f.Names.Cores)}
		if word := str(s.CommonWord, f.DeviceType); word != f.DeviceType || !c.known {
			f.DeviceType = word
			f.RegisterAnno, f.AllocAnno = "hami.io/node-"+word+"-register", "hami.io/"+word+"-devices-allocated"
		}
		out = append(out, governed{fam: f, path: c.path.String(), keys: sharedKeys()})
		ranks = append(ranks, c.rank)
	}
	return byRank(out, ranks), errs
}

// vnpuFamilies are the Ascend families of vnpus.configs.
func vnpuFamilies(v *configv1alpha1.VNPUDevices, h hamiDefaults) ([]governed, field.ErrorList) {
	if v == nil {
		return nil, nil
	}
	names := make([]*string, len(v.Configs))
	for i := range v.Configs {
		names[i] = v.Configs[i].ChipName
	}
	cs, errs := chips(h, "vnpus", names)
	var out []governed
	var ranks []int
	for i, c := range cs {
		if c.name == "" {
			continue
		}
		g, e := vnpuFamily(c, &v.Configs[i], h)
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		out = append(out, g)
		ranks = append(ranks, c.rank)
	}
	return byRank(out, ranks), errs
}

// vnpuFamily is the family of one Ascend chip.
func vnpuFamily(c chip, s *configv1alpha1.VNPUConfig, h hamiDefaults) (governed, field.ErrorList) {
	errs := required(c, map[string]bool{"commonWord": s.CommonWord != nil, "resourceName": s.ResourceName != nil,
		"resourceMemoryName": s.ResourceMemoryName != nil, "memoryAllocatable": s.MemoryAllocatable != nil,
		"memoryCapacity": s.MemoryCapacity != nil})
	f := c.base
	if !c.known {
		f = h.bySection["vnpus[910A]"] // the rule every Ascend chip shares
		f.Name, f.Section, f.Names.Cores, f.DevicePairs = "ascend-"+c.name, "vnpus["+c.name+"]", "", false
		f.NoCores = s.ResourceCoreName == nil // no core resource, as in HAMi
		f.Templates = [effective.MaxTemplates]effective.Template{}
	}
	word := str(s.CommonWord, f.DeviceType)
	f.DeviceType, f.RegisterAnno, f.AllocAnno = word, "hami.io/node-register-"+word, "hami.io/"+word+"-devices-allocated"
	f.Names.Count, f.Names.Memory = name(s.ResourceName, f.Names.Count), name(s.ResourceMemoryName, f.Names.Memory)
	f.Names.Cores = name(s.ResourceCoreName, f.Names.Cores)
	f.Whole.MemMiB, f.MemoryCapacity = num(s.MemoryAllocatable, f.Whole.MemMiB), num(s.MemoryCapacity, f.MemoryCapacity)
	f.MemoryFactor = num(s.MemoryFactor, f.MemoryFactor)
	if s.SuperPod != nil {
		f.DevicePairs = *s.SuperPod && word == "Ascend910C" // HAMi pairs only the 910C's NPUs
	}
	if s.MemoryAllocatable != nil && *s.MemoryAllocatable < 1 {
		errs = append(errs, field.Invalid(c.path.Child("memoryAllocatable"), *s.MemoryAllocatable, "must be positive"))
	}
	if len(s.Templates) > 0 {
		ts, e := templates(c.path.Child("templates"), s.Templates)
		f.Templates, errs = ts, append(errs, e...)
	}
	return governed{fam: f, path: c.path.String(), keys: [4]string{"resourceName", "resourceMemoryName", "", coreKey(f)}}, errs
}

func coreKey(f effective.Family) string {
	if f.NoCores {
		return ""
	}
	return "resourceCoreName"
}

// templates are a chip's vNPU templates (their memory; the AI cores are not
// booked).
func templates(p *field.Path, in []configv1alpha1.VNPUTemplate) ([effective.MaxTemplates]effective.Template, field.ErrorList) {
	var out [effective.MaxTemplates]effective.Template
	if len(in) > effective.MaxTemplates {
		return out, field.ErrorList{field.TooMany(p, len(in), effective.MaxTemplates)}
	}
	var errs field.ErrorList
	for i, t := range in {
		if t.Memory == nil {
			errs = append(errs, field.Required(p.Index(i).Child("memory"), "a template's memory in MiB"))
			continue
		}
		out[i] = effective.Template{Name: str(t.Name, ""), MemMiB: *t.Memory}
	}
	return out, errs
}

func str(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
