package effective

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Rule names how a family reads a container's request: which of the
// Family fields apply and what a container's count, memory and cores book.
type Rule string

// The rules of HAMi's device backends (and of Aliyun's gpushare).
const (
	// RuleShare (the zero value) is HAMi's common rule: a device count,
	// memory per device (or a percentage of it, or the whole device) and
	// cores per device, with the Default* fields for what is not set
	// (NVIDIA, Cambricon, Hygon, Iluvatar, Metax sGPU, AMD).
	RuleShare Rule = ""
	// RuleWhole books whole devices only: each device books Family.Whole
	// (Metax GPU, Enflame GCU, Kunlun XPU, Vastai, Biren).
	RuleWhole Rule = "whole"
	// RuleTemplates rounds the memory up to the smallest of
	// Family.Templates that holds it, or to Family.Whole up to
	// Family.MemoryCapacity (Ascend vNPU, Kunlun vXPU).
	RuleTemplates Rule = "templates"
	// RuleSlices takes a memory that is exactly one of Family.Templates on
	// a single device; more devices, or no memory, book Family.Whole each
	// (Moore Threads sGPU).
	RuleSlices Rule = "slices"
	// RuleProfiles books one device whose memory and cores are the
	// request as written, as HAMi's webhook checks them (Enflame DRS): a
	// count is a profile size, booked as that much memory and no cores;
	// without one, the memory and the cores as named. HAMi's scheduler
	// books the profile it picks instead (docs/devices.md says why
	// gpuadmit does not).
	RuleProfiles Rule = "profiles"
	// RuleCoreSplit takes a device count or a core count; cores fill
	// devices of Family.CoreUnits cores each (AWS Neuron).
	RuleCoreSplit Rule = "coresplit"
	// RuleGpushare books a container's memory on one shared device, or split
	// evenly over the devices its count names (Aliyun gpushare).
	RuleGpushare Rule = "gpushare"
)

// MaxTemplates is the number of templates a Family holds (an array keeps
// Family comparable).
const MaxTemplates = 8

// Template is one size a device is booked at: its memory in MiB and the
// cores booked with it.
type Template struct {
	// Name is the vendor's name of the template ("vir02"); informational.
	Name   string
	MemMiB int64
	Cores  int64
}

// The pod annotation that switches Ascend to soft splitting (Family.SoftSplit).
const (
	vnpuModeAnnotation = "huawei.com/vnpu-mode"
	vnpuModeSoft       = "hami-core"
)

// PodAnnotations are the pod annotations a family's rule reads (whoever
// keeps a slim copy of a pod must keep these).
func PodAnnotations() []string { return []string{vnpuModeAnnotation} }

// request is what a container names of a family's resources, in the
// family's units.
type request struct {
	count, mem, cores          int64
	hasCount, hasMem, hasCores bool
}

// booking is what a request books per device.
type booking struct {
	count, memMiB, pct, cores int64
}

// parseRule reads a container under s.Rule (every rule but RuleShare).
func parseRule(c *corev1.Container, role Role, s Family, opt Options) (Container, []*FieldError) {
	out := Container{Name: c.Name, Role: role}
	r := resourceReader{c: c}
	var q request
	q.count, q.hasCount = r.read(s.Names.Count, 0)
	q.mem, q.hasMem = r.readMem(s, 0)
	q.cores, q.hasCores = r.read(s.Names.Cores, s.coreLimit())
	out.Managed = r.managed
	if !out.Managed || len(r.errs) > 0 {
		return out, r.errs
	}
	var b booking
	var fe *FieldError
	switch s.Rule {
	case RuleWhole:
		b = booking{count: q.count, memMiB: s.Whole.MemMiB, cores: s.Whole.Cores}
	case RuleTemplates:
		b, fe = bookTemplates(&r, q, s, opt.annotations[vnpuModeAnnotation] == vnpuModeSoft)
	case RuleSlices:
		b, fe = bookSlices(&r, q, s)
	case RuleProfiles:
		b, fe = bookProfiles(&r, q, s)
	case RuleCoreSplit:
		b, fe = bookCoreSplit(&r, q, s)
	case RuleGpushare:
		b, fe = bookGpushare(&r, q, s)
	default:
		fe = &FieldError{Container: c.Name, Resource: "family " + s.Name, Reason: fmt.Sprintf("unknown rule %q", s.Rule)}
	}
	if fe != nil {
		return out, []*FieldError{fe}
	}
	out.Count, out.CoresPerDevice = b.count, b.cores
	out.MemPerDeviceMiB, out.MemPercent = b.memMiB, b.pct
	return out, out.setTotal(s, opt)
}

// bookTemplates: a count (pairs rounded up with Family.DevicePairs); with
// soft splitting (Family.SoftSplit and the pod's hami-core annotation) the
// memory and cores as requested; else memory rounded up to a template (no
// memory: Family.Whole), cores only as the template books them.
func bookTemplates(r *resourceReader, q request, s Family, soft bool) (booking, *FieldError) {
	if q.count == 0 { // HAMi books nothing without a positive count
		return booking{}, nil
	}
	count, fe := pairedCount(r, q.count, s)
	if fe != nil {
		return booking{}, fe
	}
	soft = soft && s.SoftSplit
	if soft {
		return softSplit(r, q, s, count)
	}
	if q.cores > 0 {
		return booking{}, r.fail(s.Names.Cores, fmt.Sprintf("is only accepted with the pod annotation %s: %s (a template fixes the cores)", vnpuModeAnnotation, vnpuModeSoft))
	}
	t := s.Whole
	if q.hasMem {
		if t, fe = roundUp(r, q.mem, s); fe != nil {
			return booking{}, fe
		}
	}
	if s.SingleSplit && q.count > 1 && t.MemMiB != s.Whole.MemMiB { // the count asked for, before pairing (as HAMi)
		return booking{}, r.fail(s.Names.Memory, fmt.Sprintf("rounds to the %d MiB template, which is only for a single device (more devices take whole devices of %d MiB)", t.MemMiB, s.Whole.MemMiB))
	}
	mem, fe := r.toMiB(t.MemMiB, s)
	return booking{count: count, memMiB: mem, cores: t.Cores}, fe
}

// softSplit books the memory as requested (none: Family.Whole; 0: the whole
// device) and the cores as requested.
func softSplit(r *resourceReader, q request, s Family, count int64) (booking, *FieldError) {
	switch {
	case !q.hasMem:
		mem, fe := r.toMiB(s.Whole.MemMiB, s)
		return booking{count: count, memMiB: mem, cores: q.cores}, fe
	case q.mem == 0:
		return booking{count: count, pct: 100, cores: q.cores}, nil
	}
	mem, fe := r.toMiB(q.mem, s)
	return booking{count: count, memMiB: mem, cores: q.cores}, fe
}

// pairedCount applies Family.DevicePairs: 1 is booked as 2, other odd
// counts are rejected.
func pairedCount(r *resourceReader, count int64, s Family) (int64, *FieldError) {
	switch {
	case !s.DevicePairs || count%2 == 0:
		return count, nil
	case count == 1:
		return 2, nil
	}
	return 0, r.fail(s.Names.Count, "must be 1 or an even number (the devices come in pairs)")
}

// roundUp returns the smallest template holding mem, else Family.Whole when
// mem is at most Family.MemoryCapacity.
func roundUp(r *resourceReader, mem int64, s Family) (Template, *FieldError) {
	for _, t := range s.Templates {
		if t.MemMiB > 0 && mem <= t.MemMiB {
			return t, nil
		}
	}
	if mem <= s.MemoryCapacity {
		return s.Whole, nil
	}
	return Template{}, r.fail(s.Names.Memory, fmt.Sprintf("exceeds the device's %d MiB", s.MemoryCapacity))
}

// bookSlices: one device with a memory that is exactly a template and the
// cores requested; more devices, or no memory, book Family.Whole each.
func bookSlices(r *resourceReader, q request, s Family) (booking, *FieldError) {
	switch {
	case !q.hasCount:
		return booking{}, nil
	case q.count == 0:
		return booking{}, r.fail(s.Names.Count, "must be greater than 0")
	case q.count > 1 || !q.hasMem:
		return booking{count: q.count, memMiB: s.Whole.MemMiB, cores: s.Whole.Cores}, nil
	}
	mem, fe := r.toMiB(q.mem, s)
	if fe != nil {
		return booking{}, fe
	}
	var legal []string
	for _, t := range s.Templates {
		if t.MemMiB > 0 && t.MemMiB == mem {
			return booking{count: 1, memMiB: mem, cores: q.cores}, nil
		}
		if t.MemMiB > 0 {
			legal = append(legal, fmt.Sprint(t.MemMiB/s.Factor()))
		}
	}
	return booking{}, r.fail(s.Names.Memory, fmt.Sprintf("must be one of %s (units of %d MiB)", strings.Join(legal, ", "), s.Factor()))
}

// maxInt32 is the largest request HAMi's Enflame backend reads: above it
// GenerateResourceRequests books nothing.
const maxInt32 = 1<<31 - 1

// bookProfiles: one device; a count (a DRS profile size) books that much
// memory and no cores, else the memory and cores as written (HAMi's
// GenerateResourceRequests for Enflame, which its webhook sums).
func bookProfiles(r *resourceReader, q request, s Family) (booking, *FieldError) {
	switch {
	case q.hasCount && q.count == 0:
		return booking{}, r.fail(s.Names.Count, "must be greater than 0")
	case q.hasCount && q.count > maxInt32:
		return booking{}, r.fail(s.Names.Count, fmt.Sprintf("must be at most %d (HAMi books nothing above it)", maxInt32))
	case q.hasCount:
		mem, fe := r.toMiB(q.count, s)
		return booking{count: 1, memMiB: mem}, fe
	case q.hasMem && q.mem == 0:
		return booking{}, r.fail(s.Names.Memory, "must be greater than 0")
	case q.mem > maxInt32:
		return booking{}, r.fail(s.Names.Memory, fmt.Sprintf("must be at most %d (HAMi books nothing above it)", maxInt32))
	case q.hasCores && q.cores == 0:
		return booking{}, r.fail(s.Names.Cores, "must be within 1..100")
	case !q.hasMem && !q.hasCores:
		return booking{}, nil
	}
	mem, fe := r.toMiB(q.mem, s)
	return booking{count: 1, memMiB: mem, cores: q.cores}, fe
}

// bookCoreSplit: a device count books Family.CoreUnits cores per device; a
// core count without one fills devices: at most one device's cores on one
// device, else a multiple of them.
func bookCoreSplit(r *resourceReader, q request, s Family) (booking, *FieldError) {
	units := s.coreUnits()
	switch {
	case q.hasCount && q.count == 0:
		return booking{}, r.fail(s.Names.Count, "must be greater than 0")
	case q.hasCount:
		return booking{count: q.count, cores: units}, nil
	case !q.hasCores:
		return booking{}, nil
	case q.cores == 0:
		return booking{}, r.fail(s.Names.Cores, "must be greater than 0")
	case q.cores <= units:
		return booking{count: 1, cores: q.cores}, nil
	case q.cores%units != 0:
		return booking{}, r.fail(s.Names.Cores, fmt.Sprintf("must be at most %d or a multiple of %d (the cores of one device)", units, units))
	}
	return booking{count: q.cores / units, cores: units}, nil
}

// bookGpushare: memory on one device, or split evenly over the devices the
// count names; a count without memory books devices without memory.
func bookGpushare(r *resourceReader, q request, s Family) (booking, *FieldError) {
	if q.mem == 0 {
		return booking{count: q.count}, nil
	}
	devices := int64(1)
	if q.hasCount {
		if q.count == 0 {
			return booking{}, r.fail(s.Names.Count, fmt.Sprintf("must be greater than 0 when %s is set", s.Names.Memory))
		}
		devices = q.count
	}
	if q.mem%devices != 0 {
		return booking{}, r.fail(s.Names.Memory, fmt.Sprintf("does not split evenly over %d devices", devices))
	}
	per, fe := r.toMiB(q.mem/devices, s)
	return booking{count: devices, memMiB: per}, fe
}

// fail is a FieldError for the value c names for name (name is present).
func (r *resourceReader) fail(name corev1.ResourceName, reason string) *FieldError {
	q, src, _ := lookupResource(r.c, name)
	return &FieldError{Container: r.c.Name, Resource: string(name), Source: src, Value: q.String(), Reason: reason}
}

// toMiB is v (in the family's memory units) in MiB, an error on overflow.
func (r *resourceReader) toMiB(v int64, s Family) (int64, *FieldError) {
	mib, ok := mulInt64(v, s.Factor())
	if !ok {
		return 0, &FieldError{Container: r.c.Name, Resource: string(s.Names.Memory), Value: fmt.Sprint(v),
			Reason: fmt.Sprintf("times memoryFactor %d does not fit in a 64-bit integer", s.Factor())}
	}
	return mib, nil
}
