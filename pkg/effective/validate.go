package effective

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Validate checks the family; errors name the HAMi configuration key under
// the family's Section ("vnpus[910B2].resourceMemoryName: must not be
// empty").
func (s Family) Validate() error {
	sec := s.section()
	if err := s.validateNames(sec); err != nil {
		return err
	}
	if err := s.validateDefaults(sec); err != nil {
		return err
	}
	return s.validateRule(sec)
}

// section is the key path Validate's messages start with.
func (s Family) section() string {
	switch {
	case s.Section != "":
		return s.Section
	case s.Name != "":
		return s.Name
	}
	return "nvidia"
}

// validateNames: every resource the backend has is named, no name twice,
// and the ones it does not have stay empty.
func (s Family) validateNames(sec string) error {
	names := []struct {
		key    string
		val    corev1.ResourceName
		absent bool
	}{
		{"resourceCountName", s.Names.Count, false},
		{"resourceMemoryName", s.Names.Memory, s.NoMemory},
		{"resourceMemoryPercentageName", s.Names.MemoryPercentage, s.NoPercentage},
		{"resourceCoreName", s.Names.Cores, s.NoCores},
	}
	seen := map[corev1.ResourceName]string{}
	for _, n := range names {
		switch {
		case n.absent && n.val != "":
			return fmt.Errorf("%s.%s: must be empty (the backend has no such resource), got %q", sec, n.key, n.val)
		case n.absent:
			continue
		case n.val == "":
			return fmt.Errorf("%s.%s: must not be empty", sec, n.key)
		}
		if other, dup := seen[n.val]; dup {
			return fmt.Errorf("%s.%s: %q is already used by %s.%s", sec, n.key, n.val, sec, other)
		}
		seen[n.val] = n.key
	}
	return nil
}

// validateDefaults checks the defaults and the units.
func (s Family) validateDefaults(sec string) error {
	switch {
	case s.DefaultMemory < 0:
		return fmt.Errorf("%s.defaultMemory: must be >= 0, got %d", sec, s.DefaultMemory)
	case s.CoreUnits < 0:
		return fmt.Errorf("%s.coreUnits: must be >= 0 (0 means 100), got %d", sec, s.CoreUnits)
	case s.DefaultCores < 0 || s.DefaultCores > s.coreUnits():
		return fmt.Errorf("%s.defaultCores: must be within 0..%d, got %d", sec, s.coreUnits(), s.DefaultCores)
	case s.DefaultGPUNum < 0:
		return fmt.Errorf("%s.defaultGPUNum: must be >= 0, got %d", sec, s.DefaultGPUNum)
	case s.MemoryFactor < 0:
		return fmt.Errorf("%s.memoryFactor: must be >= 0 (0 means 1), got %d", sec, s.MemoryFactor)
	case s.MinCores < 0 || s.MinCores > s.coreUnits():
		return fmt.Errorf("%s.minCores: must be within 0..%d, got %d", sec, s.coreUnits(), s.MinCores)
	}
	return nil
}

// validateRule checks the rule and the sizes it reads.
func (s Family) validateRule(sec string) error {
	switch s.Rule {
	case RuleShare, RuleWhole, RuleProfiles, RuleCoreSplit, RuleGpushare:
	case RuleTemplates:
		if s.MemoryCapacity < s.Whole.MemMiB {
			return fmt.Errorf("%s.memoryCapacity: must be >= the whole device's %d MiB, got %d", sec, s.Whole.MemMiB, s.MemoryCapacity)
		}
	case RuleSlices:
		if s.Templates[0].MemMiB == 0 {
			return fmt.Errorf("%s.templates: rule %q needs at least one template", sec, s.Rule)
		}
	default:
		return fmt.Errorf("%s: unknown rule %q", sec, s.Rule)
	}
	if s.Whole.MemMiB < 0 || s.Whole.Cores < 0 || s.Whole.Cores > s.coreUnits() {
		return fmt.Errorf("%s.whole: memory must be >= 0 and cores within 0..%d, got %d MiB and %d cores", sec, s.coreUnits(), s.Whole.MemMiB, s.Whole.Cores)
	}
	return s.validateTemplates(sec)
}

// validateTemplates: positive, strictly ascending memory, cores within a
// device's, the unused entries last.
func (s Family) validateTemplates(sec string) error {
	var last int64
	for i, t := range s.Templates {
		switch {
		case t == Template{}:
			last = -1
			continue
		case last < 0:
			return fmt.Errorf("%s.templates[%d]: follows an empty template", sec, i)
		case t.MemMiB <= last:
			return fmt.Errorf("%s.templates[%d]: memory must be positive and above the previous template's %d MiB, got %d", sec, i, last, t.MemMiB)
		case t.Cores < 0 || t.Cores > s.coreUnits():
			return fmt.Errorf("%s.templates[%d]: cores must be within 0..%d, got %d", sec, i, s.coreUnits(), t.Cores)
		}
		last = t.MemMiB
	}
	return nil
}

// ValidateFamilies validates every family and rejects two families with
// the same Name (or none) and a resource name two families use.
func ValidateFamilies(fams []Family) error {
	byName := map[string]int{}
	owner := map[corev1.ResourceName]string{}
	var errs []error
	for i := range fams {
		f := &fams[i]
		if err := f.Validate(); err != nil {
			errs = append(errs, err)
		}
		if f.Name == "" {
			errs = append(errs, fmt.Errorf("family %d (%s): name must not be empty", i, f.section()))
		} else if j, dup := byName[f.Name]; dup {
			errs = append(errs, fmt.Errorf("families %d and %d are both named %q", j, i, f.Name))
		}
		byName[f.Name] = i
		for _, n := range [...]corev1.ResourceName{f.Names.Count, f.Names.Memory, f.Names.MemoryPercentage, f.Names.Cores} {
			if n == "" {
				continue
			}
			if other, dup := owner[n]; dup && other != f.Name {
				errs = append(errs, fmt.Errorf("resource %q is used by families %q and %q", n, other, f.Name))
			}
			owner[n] = f.Name
		}
	}
	return errors.Join(errs...)
}
