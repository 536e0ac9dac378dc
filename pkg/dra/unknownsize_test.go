package dra_test

import (
	"fmt"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestUnknownMemoryNeverCountsAsLess attacks a device of unknown size (it
// publishes no memory, or an implausible one) counted as 0 MiB: a claim
// whose selector picks only such a device, once the CEL budget runs out
// (the devices not evaluated count as eligible, 10 GiB ones among them) or
// with a selector "pinned || small", was charged a 10 GiB device where the
// full evaluation leaves it unresolved. Whatever the budget, the claim is
// unresolved without a fallback size and charged at least the fallback
// with one.
func TestUnknownMemoryNeverCountsAsLess(t *testing.T) {
	pinned := dev("gpu-0", "2Ti", "type", "gpu", "pin", "x") // above the 1 TiB bound: sizes nobody
	noMemory := dev("gpu-0", "", "type", "gpu", "pin", "x")
	const pin = `"pin" in device.attributes["gpu.nvidia.com"] && device.attributes["gpu.nvidia.com"].pin == "x"`
	const small = `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) < 0`
	inv := func(first resourcev1.Device) *dra.Inventory {
		ss := []*resourcev1.ResourceSlice{slice("a-node", nvDriver, "a-node", first)}
		for n := range 3 {
			var devs []resourcev1.Device
			for g := range 8 {
				devs = append(devs, gpuDev(fmt.Sprintf("gpu-%d", g), "10Gi"))
			}
			ss = append(ss, slice(fmt.Sprintf("b-node-%d", n), nvDriver, fmt.Sprintf("b-node-%d", n), devs...))
		}
		return inventory(ss...)
	}
	chargers := map[string]*dra.Charger{"unlimited budget": chargerWith(t, dra.WithClaimCostBudget(1<<62)), "default budget": chargerWith(t)}
	for _, tc := range []struct {
		name     string
		device   resourcev1.Device
		expr     string
		fallback int64
		want     int64 // 0: unresolved
	}{
		{"costly pin, implausible, no fallback", pinned, costlyPrefix(25) + " && " + pin, 0, 0},
		{"costly pin, implausible, a fallback", pinned, costlyPrefix(25) + " && " + pin, 40 * 1024, 40 * 1024},
		{"costly pin, no memory, no fallback", noMemory, costlyPrefix(25) + " && " + pin, 0, 0},
		{"pinned or small, no fallback", pinned, "(" + pin + ") || " + small, 0, 0},
		{"pinned or small, a smaller fallback", pinned, "(" + pin + ") || " + small, 4 * 1024, 10 * 1024},
		{"pinned or small, a larger fallback", pinned, "(" + pin + ") || " + small, 40 * 1024, 40 * 1024},
	} {
		for cname, c := range chargers {
			t.Run(tc.name+"/"+cname, func(t *testing.T) {
				ds, err := c.Demands(t.Context(), "c", spec(exact("gpu", gpuClass, 1, tc.expr)), nil, inv(tc.device), nvidiaOpts(tc.fallback))
				if err != nil || len(ds) != 1 {
					t.Fatalf("Demands = %v, %v", ds, err)
				}
				if got := ds.Effective().Of(effective.NvidiaName).MemMiB; got != tc.want {
					t.Errorf("charged %d MiB, want %d", got, tc.want)
				}
				if un := len(ds[0].Unresolved) > 0; un != (tc.want == 0) {
					t.Errorf("unresolved %v, want %v", ds[0].Unresolved, tc.want == 0)
				}
			})
		}
	}
}
