package effective_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestHAMiRules checks each HAMi accounting rule gpuadmit matches. Each case
// names, in one line, the HAMi behaviour it follows (HAMi's
// pkg/device/nvidia: the request parsing of GenerateResourceRequests, the
// booking in Fit, and the mutating webhook's defaultExclusiveCoreIfNeeded).
func TestHAMiRules(t *testing.T) {
	const card = 24576
	dm := defset
	dm.DefaultMemory = 4096
	noExcl := defset
	noExcl.ExclusiveCores = false
	tests := []struct {
		name  string
		hami  string // the HAMi behaviour matched
		pod   *testpod.Builder
		set   *effective.Family
		want  effective.Vector
		unres bool
	}{
		{name: "gpumem 0 is unset: whole card",
			hami: "a gpumem of 0 counts as absent, so with defaultMemory 0 the container books 100 % of the card",
			pod:  testpod.New("p").App("a", gpu(1), mem(0)), want: vec(1, card, 0)},
		{name: "gpumem -0 is unset: whole card",
			hami: "-0 is the quantity 0, which HAMi reads as absent",
			pod:  testpod.New("p").App("a", gpu(1), testpod.Res(testpod.MemName, "-0")), want: vec(1, card, 0)},
		{name: "gpumem-percentage 0 is unset: whole card",
			hami: "TestGenerateResourceRequests 'percentage of 0 — treated as unset' and TestZeroMemoryPercentageIsAccountedAsWholeCard book the whole card",
			pod:  testpod.New("p").App("a", gpu(1), pct(0)), want: vec(1, card, 0)},
		{name: "percentage 0 in requests is unset too",
			hami: "'memory percentage of 0 in Requests — treated as unset': whole card",
			pod:  testpod.New("p").App("a", testpod.Request(gpu(1), pct(0))), want: vec(1, card, 0)},
		{name: "gpumem 0 with a percentage: the percentage counts",
			hami: "Fit uses the percentage whenever gpumem is 0",
			pod:  testpod.New("p").App("a", gpu(1), mem(0), pct(50)), want: vec(1, card/2, 0)},
		{name: "percentage 0 with gpumem: gpumem wins",
			hami: "'memory percentage of 0 + explicit memory — explicit memory wins'",
			pod:  testpod.New("p").App("a", gpu(1), mem(2000), pct(0)), want: vec(1, 2000, 0)},
		{name: "gpumem 0 with defaultMemory: defaultMemory",
			hami: "TestGenerateResourceRequests_DefaultMemory: gpumem 0 and no percentage books defaultMemory",
			pod:  testpod.New("p").App("a", gpu(2), mem(0)), set: &dm, want: vec(2, 2*4096, 0)},
		{name: "percentage 0 with defaultMemory: defaultMemory",
			hami: "TestGenerateResourceRequests_DefaultMemory: percentage 0 books defaultMemory (and is not exclusive)",
			pod:  testpod.New("p").App("a", gpu(1), pct(0)), set: &dm, want: vec(1, 4096, 0)},
		{name: "exclusive: bare count gets 100 cores per device",
			hami: "defaultExclusiveCoreIfNeeded sets gpucores 100 when the count is set and neither gpumem nor a percentage nor gpucores is",
			pod:  testpod.New("p").App("a", gpu(2)), want: vec(2, 2*card, 200)},
		{name: "exclusive: percentage 100 without cores",
			hami: "defaultExclusiveCoreIfNeeded: a percentage of exactly 100 is an exclusive request",
			pod:  testpod.New("p").App("a", gpu(1), pct(100)), want: vec(1, card, 100)},
		{name: "not exclusive: percentage 50",
			hami: "defaultExclusiveCoreIfNeeded: any other percentage is shared",
			pod:  testpod.New("p").App("a", gpu(1), pct(50)), want: vec(1, card/2, 0)},
		{name: "not exclusive: explicit gpucores 0 is respected",
			hami: "defaultExclusiveCoreIfNeeded does nothing when gpucores is present, even 0",
			pod:  testpod.New("p").App("a", gpu(1), cores(0)), want: vec(1, card, 0)},
		{name: "not exclusive: gpumem 0 present",
			hami: "defaultExclusiveCoreIfNeeded treats any gpumem value, even 0, as a shared request (the card is still booked whole)",
			pod:  testpod.New("p").App("a", gpu(1), mem(0)), want: vec(1, card, 0)},
		{name: "not exclusive: percentage 0 present",
			hami: "defaultExclusiveCoreIfNeeded: a percentage of 0 is not 100, so cores stay at defaultCores",
			pod:  testpod.New("p").App("a", gpu(1), pct(0)), want: vec(1, card, 0)},
		{name: "exclusive ignores defaultMemory",
			hami: "defaultExclusiveCoreIfNeeded does not look at defaultMemory",
			pod:  testpod.New("p").App("a", gpu(1)), set: &dm, want: vec(1, 4096, 100)},
		{name: "exclusive with a defaulted count",
			hami: "MutateAdmission adds defaultGPUNum before defaultExclusiveCoreIfNeeded runs",
			pod:  testpod.New("p").App("a", pct(100)), want: vec(1, card, 100)},
		{name: "exclusive switched off",
			hami: "(gpuadmit's switch; HAMi has none) cores stay at defaultCores",
			pod:  testpod.New("p").App("a", gpu(1)), set: &noExcl, want: vec(1, card, 0)},
		{name: "defaultMemory is MiB, memoryFactor not applied",
			hami: "GenerateResourceRequests multiplies only gpumem by memoryFactor",
			pod:  testpod.New("p").App("a", gpu(1), cores(10)), set: func() *effective.Family { s := dm; s.MemoryFactor = 4; return &s }(),
			want: vec(1, 4096, 10)},
		{name: "memoryFactor multiplies gpumem",
			hami: "TestGenerateResourceRequests_MemoryFactor: gpumem 1024 with factor 2 books 2048",
			pod:  testpod.New("p").App("a", gpu(1), mem(1024)), set: func() *effective.Family { s := defset; s.MemoryFactor = 2; return &s }(),
			want: vec(1, 2048, 0)},
		{name: "whole card unresolved without a device size",
			hami: "a whole-card booking is the chosen card's memory, unknown until a card is known",
			pod:  testpod.New("p").App("a", gpu(1), mem(0)), want: vec(1, 0, 0), unres: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := defset
			if tt.set != nil {
				set = *tt.set
			}
			opt := effective.Options{DeviceMemoryMiB: card}
			if tt.unres {
				opt = effective.Options{}
			}
			d, err := effective.Compute(tt.pod.Build(), set, opt)
			if err != nil {
				t.Fatalf("Compute: %v (HAMi: %s)", err, tt.hami)
			}
			if d.Effective != tt.want || (len(d.Unresolved) > 0) != tt.unres {
				t.Errorf("effective %v unresolved %v, want %v unresolved %v (HAMi: %s)", d.Effective, d.Unresolved, tt.want, tt.unres, tt.hami)
			}
		})
	}
}

// TestPercentageAgainstAssignedDevices: once HAMi has assigned devices, a
// percentage is a share of each assigned card (Fit: memreq = Totalmem * pct / 100).
func TestPercentageAgainstAssignedDevices(t *testing.T) {
	pod := testpod.New("p").App("a", gpu(2), pct(50)).App("b", gpu(1), mem(100)).Build()
	d, err := effective.Compute(pod, defset, effective.Options{DeviceMemoryMiB: 81920,
		AssignedMemoryMiB: map[string][]int64{"a": {24576, 40960}, "b": {24576}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := vec(3, 12288+20480+100, 0); d.Effective != want {
		t.Errorf("effective %v, want %v", d.Effective, want)
	}
	// A container with fewer known devices than it asks for falls back to the device size given.
	d, err = effective.Compute(pod, defset, effective.Options{DeviceMemoryMiB: 81920,
		AssignedMemoryMiB: map[string][]int64{"a": {24576}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := vec(3, 81920+100, 0); d.Effective != want {
		t.Errorf("effective %v, want %v", d.Effective, want)
	}
}

// TestQuantityForms: the API server canonicalises quantities before any
// webhook sees them; the CLI reads the same values the same way.
func TestQuantityForms(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "  5", want: 5}, {in: "1.0", want: 1}, {in: "100e-2", want: 1}, {in: "16.0Gi", want: 16 << 30},
		{in: "1000000000000000000", want: 1e18}, {in: "1E", want: 1e18}, {in: "1", want: 1},
		{in: "9223372036854775807", want: 9223372036854775807}, {in: "-0", want: 0}, {in: "8E", want: 8e18},
		{in: "9223372036854775808", err: "does not fit in a 64-bit integer"},
		{in: "10E", err: "does not fit in a 64-bit integer"},
		{in: "1500m", err: "must be a whole number"}, {in: "0.5", err: "must be a whole number"},
		{in: "-1", err: "must not be negative"}, {in: "abc", err: "not a quantity"},
	} {
		v, err := effective.ParseQuantity(tt.in)
		switch {
		case tt.err == "" && (err != nil || v != tt.want):
			t.Errorf("ParseQuantity(%q) = %d, %v; want %d", tt.in, v, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseQuantity(%q) = %d, %v; want an error containing %q", tt.in, v, err, tt.err)
		}
	}
}
