package effective_test

import (
	"math"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestSaturating(t *testing.T) {
	const maxI = math.MaxInt64
	for _, tt := range []struct{ a, b, sum int64 }{
		{0, 0, 0}, {1, 2, 3}, {maxI, 0, maxI}, {maxI, 1, maxI}, {maxI - 1, 1, maxI}, {maxI, maxI, maxI},
	} {
		if got := effective.SatAdd(tt.a, tt.b); got != tt.sum {
			t.Errorf("SatAdd(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.sum)
		}
	}
	v := effective.Vector{GPU: maxI, MemMiB: 1, Cores: 2}.AddSat(effective.Vector{GPU: 5, MemMiB: 2, Cores: maxI})
	if v != (effective.Vector{GPU: maxI, MemMiB: 3, Cores: maxI}) {
		t.Errorf("AddSat = %+v", v)
	}
	for _, tt := range []struct{ a, limit, want int64 }{
		{0, 10, 0}, {9, 10, 90}, {10, 3, 333}, {1, 0, 0}, {5, -1, 0},
		{maxI, 1, maxI},   // a * 100 beyond int64, the quotient too
		{maxI, maxI, 100}, // a * 100 beyond int64, the quotient not
		{maxI / 100, 1, maxI / 100 * 100},
	} {
		if got := effective.Percent(tt.a, tt.limit); got != tt.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tt.a, tt.limit, got, tt.want)
		}
	}
}

func TestDimensions(t *testing.T) {
	v := effective.Vector{GPU: 1, MemMiB: 2, Cores: 3}
	names := effective.Nvidia().Names
	want := []struct {
		s    string
		v    int64
		name string
	}{{"count", 1, "nvidia.com/gpu"}, {"memory", 2, "nvidia.com/gpumem"}, {"cores", 3, "nvidia.com/gpucores"}}
	for i, d := range effective.Dimensions() {
		if d.String() != want[i].s || v.Get(d) != want[i].v || string(names.Of(d)) != want[i].name {
			t.Errorf("dimension %d: %s %d %s, want %+v", i, d, v.Get(d), names.Of(d), want[i])
		}
	}
	if bad := effective.Dimension(7); bad.String() != "unknown" || v.Get(bad) != 0 || names.Of(bad) != "" {
		t.Errorf("an unknown dimension reads %s %d %q", bad, v.Get(bad), names.Of(bad))
	}
}
