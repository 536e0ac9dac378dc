package quotacheck_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/quotacheck"
)

// TestRead: a memory limit in bytes is MiB rounded down, never the number
// of bytes as MiB (an effectively infinite limit); a value that is not
// whole is rounded down (never more than written); a negative or
// overflowing value blocks; each is reported with the value as written.
func TestRead(t *testing.T) {
	for _, tt := range []struct {
		value   string
		memory  bool
		factor  int64
		want    int64
		invalid bool
		written string
		problem string // "" : read as written
	}{
		{value: "24576", memory: true, want: 24576, written: "24576"},
		{value: "24000", memory: true, want: 24000, written: "24000"}, // the API server writes "24k"
		{value: "24Gi", memory: true, want: 24576, written: "24Gi", problem: `HAMi reads it as 25769803776 MiB`},
		{value: "24Gi", memory: true, factor: 1024, want: 24576, written: "24Gi", problem: `write "24"`},
		{value: "8G", memory: true, want: 7629, written: "8G", problem: "enforced as 7629 MiB (bytes rounded down to MiB)"},
		{value: "8000000000", memory: true, want: 7629, written: "8G", problem: "a memory limit in bytes"},
		{value: "1e9", memory: true, want: 953, written: "1e9", problem: "a memory limit in bytes"},
		{value: "999999999", memory: true, want: 999999999, written: "999999999"},
		{value: "1536Ki", memory: true, want: 1, written: "1536Ki", problem: "enforced as 1 MiB"},
		{value: "10E", memory: true, want: 9536743164062, written: "10E", problem: "HAMi reads the number of bytes as memory units"},
		{value: "1.5", want: 1, written: "1.5", problem: "not a whole number: enforced as 1 (rounded down"},
		{value: "500m", memory: true, want: 0, written: "0.5", problem: "enforced as 0 MiB"},
		{value: "1.5", memory: true, factor: 1024, want: 1536, written: "1.5", problem: "enforced as 1536 MiB"},
		{value: "2Gi", want: 2 << 30, written: "2Gi"}, // a count: a number
		{value: "-1", invalid: true, written: "-1", problem: "must not be negative"},
		{value: "100M", memory: true, factor: 1 << 40, invalid: true, written: "100000000", problem: "does not fit"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			q := resource.MustParse(tt.value)
			wire, err := q.MarshalJSON() // what the API server stores and a webhook decodes
			if err != nil || q.UnmarshalJSON(wire) != nil {
				t.Fatal(err)
			}
			r := quotacheck.Read(q, tt.memory, tt.factor)
			if r.Value != tt.want || r.Invalid != tt.invalid || r.Written != tt.written {
				t.Errorf("Read = %+v, want value %d invalid %v written %q", r, tt.want, tt.invalid, tt.written)
			}
			if (tt.problem == "") != (r.Problem == "") || !strings.Contains(r.Problem, tt.problem) {
				t.Errorf("problem %q, want %q", r.Problem, tt.problem)
			}
		})
	}
}

// TestReadByTheWrittenForm: a quantity a client made in binary format
// whose value has no binary suffix is written as a number, and read as
// MiB; one that has is written with it, and read as bytes, as a user
// reading the object would.
func TestReadByTheWrittenForm(t *testing.T) {
	if r := quotacheck.Read(*resource.NewQuantity(1000, resource.BinarySI), true, 1); r.Value != 1000 || r.Problem != "" || r.Written != "1000" {
		t.Errorf("1000 in binary format: %+v, want 1000 MiB as written", r)
	}
	if r := quotacheck.Read(*resource.NewQuantity(24576, resource.BinarySI), true, 1); r.Value != 0 || r.Written != "24Ki" || r.Problem == "" {
		t.Errorf("24576 in binary format, written 24Ki: %+v, want 24 KiB, 0 MiB, reported", r)
	}
}

// TestUngoverned: every limits. key of an extended resource that no
// governed family enforces is found, with why; governed keys, native
// resources and requests. keys are not.
func TestUngoverned(t *testing.T) {
	hard := corev1.ResourceList{
		"limits.nvidia.com/gpumem":            resource.MustParse("8000"),
		"limits.nvidia.com/gpu":               resource.MustParse("2"),
		"limits.hygon.com/dcumem":             resource.MustParse("8000"),
		"limits.nvidia.com/gpumem-percentage": resource.MustParse("50"),
		"limits.hygon.com/vram":               resource.MustParse("1"),
		"limits.example.com/fpga":             resource.MustParse("1"),
		"limits.cpu":                          resource.MustParse("4"),
		"limits.memory":                       resource.MustParse("4Gi"),
		"requests.hygon.com/dcumem":           resource.MustParse("8000"),
		"limits.kubernetes.io/x":              resource.MustParse("1"),
		"limits.hugepages-2Mi":                resource.MustParse("1Gi"),
	}
	got := quotacheck.Ungoverned(hard, []effective.Family{effective.Nvidia()})
	want := []struct{ key, msg string }{
		{"limits.example.com/fpga", "no device family gpuadmit governs has this resource"},
		{"limits.hygon.com/dcumem", "a resource of the hygon device family, which gpuadmit does not govern (no hygon section"},
		{"limits.hygon.com/vram", "not a resource of the hygon device family as configured"},
		{"limits.nvidia.com/gpumem-percentage", "a memory percentage is not enforced by gpuadmit"},
	}
	if len(got) != len(want) {
		t.Fatalf("found %+v, want %d", got, len(want))
	}
	for i, w := range want {
		if got[i].Key != w.key || !strings.Contains(got[i].Message, w.msg) || got[i].Value == "" {
			t.Errorf("finding %d %+v, want %s: %s", i, got[i], w.key, w.msg)
		}
	}
	hygon := effective.HAMiFamilies()[2]
	if got := quotacheck.Ungoverned(hard, []effective.Family{effective.Nvidia(), hygon}); len(got) != 3 {
		t.Errorf("with the hygon section governed: %+v, want fpga, vram and the percentage alone", got)
	}
	for key, kept := range map[corev1.ResourceName]bool{"limits.hygon.com/dcumem": true, "limits.nvidia.com/gpu": true,
		"requests.nvidia.com/gpu": true, "requests.example.com/fpga": false, "limits.cpu": false, "nvidia.com/gpu": false} {
		if quotacheck.Kept(key, []effective.Family{effective.Nvidia()}) != kept {
			t.Errorf("Kept(%s) = %v", key, !kept)
		}
	}
}
