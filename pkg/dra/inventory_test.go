package dra_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
)

// hijack is node-a publishing pool node-b, one generation ahead of node-b's
// own, with a 1 MiB gpu-0 (and node-a's own pool).
func hijack() []*resourcev1.ResourceSlice {
	own := slice("node-b-gpus", nvDriver, "node-b", gpuDev("gpu-0", "141Gi"))
	forged := slice("node-a-forged", nvDriver, "node-a", gpuDev("gpu-0", "1Mi"))
	forged.Spec.Pool.Name, forged.Spec.Pool.Generation = "node-b", own.Spec.Pool.Generation+1
	mine := slice("node-a-gpus", nvDriver, "node-a", gpuDev("gpu-0", "80Gi"))
	return []*resourcev1.ResourceSlice{own, forged, mine}
}

// TestPoolHijack: a node cannot hide or resize another node's devices by
// publishing that node's pool: node-b's 141 GiB device is charged 141 GiB
// before and after allocation, whatever order the slices come in, and the
// conflict is reported.
func TestPoolHijack(t *testing.T) {
	c := newCharger(t)
	claim := spec(exact("gpu", gpuClass, 1))
	var first []dra.SliceProblem
	for i := range 20 {
		ss := hijack()
		rand.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		inv := inventory(ss...)
		for _, alloc := range []*resourcev1.AllocationResult{nil, allocated("gpu", nvDriver, "node-b", "gpu-0")} {
			ds, err := c.Demands(t.Context(), "claim", claim, alloc, inv, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := ds[0].Effective.MemMiB; got != 141*1024 {
				t.Errorf("order %d, allocated %v: charged %d MiB, want 144384 (node-b's device)", i, alloc != nil, got)
			}
		}
		ps := inv.Problems()
		if i == 0 {
			first = ps
		}
		if !slices.Equal(ps, first) {
			t.Errorf("order %d: problems %v, want %v (the same whatever the order)", i, ps, first)
		}
	}
	if !hasProblem(first, "node-a-forged", "publishes pool node-b, which node node-b publishes as its own") {
		t.Errorf("problems %v do not report node-a's forged pool", first)
	}
}

// TestPoolHijackAbsentOwner: while node-b's slice is absent, node-a's
// forged pool node-b is node-a's: a claim allocated on node-b's gpu-0 is
// not sized by it (it falls back to the largest eligible device).
func TestPoolHijackAbsentOwner(t *testing.T) {
	ss := hijack()[1:]
	ds, err := newCharger(t).Demands(t.Context(), "claim", spec(exact("gpu", gpuClass, 1)),
		allocated("gpu", nvDriver, "node-b", "gpu-0"), inventory(ss...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds[0].Effective.MemMiB; got != 80*1024 {
		t.Errorf("charged %d MiB, want 81920 (the largest eligible device, not node-a's 1 MiB)", got)
	}
}

// TestGenerationsPerNode: a pool's generations are compared among its own
// node's slices: a newer generation of node-a's pool named like node-b's
// drops none of node-b's devices.
func TestGenerationsPerNode(t *testing.T) {
	b := slice("b", nvDriver, "node-b", gpuDev("gpu-0", "141Gi"), gpuDev("gpu-1", "141Gi"))
	a := slice("a", nvDriver, "node-a", gpuDev("gpu-9", "1Mi"))
	a.Spec.Pool.Name, a.Spec.Pool.Generation = "shared", 7
	b.Spec.Pool.Name = "shared"
	inv := inventory(a, b)
	if inv.Len() != 3 {
		t.Errorf("Len = %d, want 3 (each node's newest generation)", inv.Len())
	}
	if !hasProblem(inv.Problems(), "b", "also published by node(s) node-a") {
		t.Errorf("problems %v do not report the shared pool", inv.Problems())
	}
}

// TestNetworkPools: pools that are not node-local count only for the
// drivers trusted with them; the others are reported.
func TestNetworkPools(t *testing.T) {
	yes := true
	network := slice("net", nvDriver, "", gpuDev("g0", "141Gi"))
	network.Spec.NodeName, network.Spec.AllNodes, network.Spec.Pool.Name = nil, &yes, "fabric"
	local := slice("n1", nvDriver, "n1", gpuDev("g0", "80Gi"))
	tests := []struct {
		name    string
		opts    []dra.InventoryOption
		devices int
		problem bool
	}{
		{"every driver by default", nil, 2, false},
		{"the driver listed", []dra.InventoryOption{dra.NetworkPoolDrivers([]string{nvDriver})}, 2, false},
		{"another driver listed", []dra.InventoryOption{dra.NetworkPoolDrivers([]string{"example.com"})}, 1, true},
		{"none", []dra.InventoryOption{dra.NetworkPoolDrivers(nil)}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := dra.NewInventory([]*resourcev1.ResourceSlice{network, local}, tt.opts...)
			if inv.Len() != tt.devices {
				t.Errorf("Len = %d, want %d", inv.Len(), tt.devices)
			}
			if got := hasProblem(inv.Problems(), "net", "not node-local"); got != tt.problem {
				t.Errorf("problems %v, want the network pool reported: %v", inv.Problems(), tt.problem)
			}
		})
	}
}

// TestImplausibleCapacity: a device that publishes more memory than its
// family's bound (or none above 0) is reported and sizes nothing: it
// neither raises an unallocated claim's worst case to what it publishes nor
// sizes an allocation made on it. It is a device of unknown size, so it
// counts as the family's fallback size (the larger of that and the largest
// plausible eligible device), and leaves the claim unresolved when there is
// none: never as less.
func TestImplausibleCapacity(t *testing.T) {
	inflated := slice("n2", nvDriver, "n2", gpuDev("gpu-0", "1125899906842624Mi")) // 2^50 MiB
	zero := slice("n3", nvDriver, "n3", gpuDev("gpu-0", "0"))
	honest := slice("n1", nvDriver, "n1", gpuDev("gpu-0", "80Gi"))
	inv := inventory(inflated, zero, honest)
	claim := spec(exact("gpu", gpuClass, 1))
	tests := []struct {
		name  string
		c     *dra.Charger
		alloc *resourcev1.AllocationResult
		// fallback is the family's size for unknown devices (0: none).
		fallback int64
		want     int64 // 0: unresolved (reported by the ledger), not charged from the device
	}{
		{"unallocated, no fallback", newCharger(t), nil, 0, 0},
		{"unallocated, a smaller fallback", newCharger(t), nil, 40 * 1024, 80 * 1024},
		{"unallocated, a larger fallback", newCharger(t), nil, 100 * 1024, 100 * 1024},
		{"allocated on the inflated device", newCharger(t), allocated("gpu", nvDriver, "n2", "gpu-0"), 0, 0},
		{"allocated on the inflated device, a fallback", newCharger(t), allocated("gpu", nvDriver, "n2", "gpu-0"), 40 * 1024, 80 * 1024},
		{"allocated on the zero device", newCharger(t), allocated("gpu", nvDriver, "n3", "gpu-0"), 0, 0},
		{"allocated on the honest device", newCharger(t), allocated("gpu", nvDriver, "n1", "gpu-0"), 0, 80 * 1024},
		{"a lower bound", chargerWith(t, dra.WithMemoryBound(func(string) int64 { return 40 * 1024 })), nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := tt.c.Demands(t.Context(), "claim", claim, tt.alloc, inv, nvidiaOpts(tt.fallback))
			if err != nil {
				t.Fatal(err)
			}
			if got := ds[0].Effective.MemMiB; got != tt.want {
				t.Errorf("charged %d MiB, want %d", got, tt.want)
			}
			if unresolved := len(ds[0].Unresolved) > 0; unresolved != (tt.want == 0) {
				t.Errorf("unresolved %v, want %v", ds[0].Unresolved, tt.want == 0)
			}
		})
	}
	ps := newCharger(t).Implausible(inv)
	if len(ps) != 2 || !hasProblem(ps, "n2", "above the 1048576 MiB") || !hasProblem(ps, "n3", "not above 0") {
		t.Errorf("Implausible = %v, want n2's and n3's devices", ps)
	}
}

// hasProblem reports whether ps has a problem of slice saying msg.
func hasProblem(ps []dra.SliceProblem, slice, msg string) bool {
	for _, p := range ps {
		if p.Slice == slice && strings.Contains(p.Message, msg) {
			return true
		}
	}
	return false
}
