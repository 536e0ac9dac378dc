package dra_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// costly is a selector the API server accepts (its estimated cost is below
// resourcev1.CELSelectorExpressionMaxCost) that costs ~143,000 runtime cost
// units per device, then keeps the devices below 100Gi.
var costly = costlyPrefix(25) + ` && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("100Gi")) < 0`

// costlyPrefix is a true expression of n³ comprehension steps.
func costlyPrefix(n int) string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprint(i)
	}
	list := "[" + strings.Join(l, ",") + "]"
	return fmt.Sprintf(`%s.all(a, %s.all(b, %s.all(c, a+b+c >= 0)))`, list, list, list)
}

// hostileInventory is n 80Gi GPUs on n/8 nodes and, last, one 141Gi GPU
// the selector rules out once evaluated.
func hostileInventory(n int) *dra.Inventory {
	var ss []*resourcev1.ResourceSlice
	for node := range n / 8 {
		name := fmt.Sprintf("node-%02d", node)
		var devs []resourcev1.Device
		for g := range 8 {
			devs = append(devs, gpuDev(fmt.Sprintf("gpu-%d", g), "80Gi"))
		}
		ss = append(ss, slice(name, nvDriver, name, devs...))
	}
	return inventory(append(ss, slice("z-node", nvDriver, "z-node", gpuDev("gpu-0", "141Gi")))...)
}

func chargerWith(t testing.TB, opts ...dra.ChargerOption) *dra.Charger {
	t.Helper()
	c, err := dra.NewCharger(testClasses(), []effective.Family{effective.Nvidia()}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func memOf(ctx context.Context, t *testing.T, c *dra.Charger, inv *dra.Inventory, expr string) int64 {
	t.Helper()
	ds, err := c.Demands(ctx, "claim", spec(exact("gpu", gpuClass, 1, expr)), nil, inv, nil)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Demands = %v, %v", ds, err)
	}
	return ds[0].Effective.MemMiB
}

// TestHostileSelectorBounded: a selector too costly to evaluate on each of
// 65 devices within a review (docs/performance.md: the hostile selector)
// stops within the claim's CEL budget or the caller's deadline, whichever
// comes first, and the devices it was not evaluated on count as eligible:
// the charge is the worst case (141Gi), never the 80Gi the full evaluation
// would give.
func TestHostileSelectorBounded(t *testing.T) {
	loose := chargerWith(t, dra.WithClaimCostBudget(1<<62))
	if got := memOf(t.Context(), t, loose, hostileInventory(8), costly); got != 80*1024 {
		t.Fatalf("a full evaluation charges %d MiB, want 81920 (the selector rules the 141Gi device out)", got)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name    string
		charger *dra.Charger
		ctx     func() (context.Context, context.CancelFunc)
	}{
		{"cost budget", chargerWith(t, dra.WithClaimCostBudget(300_000)), func() (context.Context, context.CancelFunc) {
			return context.WithCancel(t.Context())
		}},
		{"deadline", chargerWith(t, dra.WithClaimCostBudget(1<<62)), func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 50*time.Millisecond)
		}},
		{"deadline already past", chargerWith(t, dra.WithClaimCostBudget(1<<62)), func() (context.Context, context.CancelFunc) {
			return cancelled, func() {}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			got := memOf(ctx, t, tt.charger, hostileInventory(64), costly)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the claim took %v: its CEL is not bounded", took)
			}
			if got != 141*1024 {
				t.Errorf("charged %d MiB, want 144384 (the devices not evaluated are eligible)", got)
			}
		})
	}
}

// TestBudgetDeterministic: what a claim is charged depends on its
// selectors, the inventory and the budget, not on which claim evaluated
// the selectors first (the ledger's recount must agree with its charges).
func TestBudgetDeterministic(t *testing.T) {
	tight := chargerWith(t, dra.WithClaimCostBudget(200_000)) // ~1.4 devices of costly
	loose := chargerWith(t, dra.WithClaimCostBudget(1<<62))
	cold := func(c *dra.Charger) int64 { return memOf(t.Context(), t, c, hostileInventory(8), costly) }
	wantTight, wantLoose := cold(tight), cold(loose)
	if wantTight != 141*1024 || wantLoose != 80*1024 {
		t.Fatalf("cold: tight %d, loose %d MiB; want 144384 and 81920", wantTight, wantLoose)
	}
	for _, order := range [][]*dra.Charger{{tight, loose, tight}, {loose, tight, loose}} {
		inv := hostileInventory(8)
		for i, c := range order {
			want := wantLoose
			if c == tight {
				want = wantTight
			}
			if got := memOf(t.Context(), t, c, inv, costly); got != want {
				t.Errorf("evaluation %d: charged %d MiB, want %d (as on a cold inventory)", i, got, want)
			}
		}
	}
}

// TestUngovernedClass: a DeviceClass outside the governed list that can
// select a governed driver's devices is a problem; one that cannot is not.
func TestUngovernedClass(t *testing.T) {
	inv := inventory(slice("n1", nvDriver, "n1", gpuDev("gpu-0", "80Gi")),
		slice("other", "example.com", "n1", dev("x", "1Gi", "type", "fpga")))
	class := func(name string, exprs ...string) *resourcev1.DeviceClass {
		dc := &resourcev1.DeviceClass{}
		dc.Name = name
		for _, e := range exprs {
			dc.Spec.Selectors = append(dc.Spec.Selectors, sel(e))
		}
		return dc
	}
	tests := []struct {
		name    string
		class   *resourcev1.DeviceClass
		inv     *dra.Inventory
		problem string
	}{
		{"governed", class(gpuClass), inv, ""},
		{"another driver's", class("fpga", `device.driver == "example.com"`), inv, ""},
		{"no selectors", class("any"), nil, "has no selectors"},
		{"the governed driver", class("copy", `device.driver == "gpu.nvidia.com"`), inv, "selects device gpu.nvidia.com/n1/gpu-0"},
		{"an attribute of the governed driver's", class("gpus", `device.attributes["gpu.nvidia.com"].type == "gpu"`), inv, "selects device"},
		{"a selector failing at run time", class("bad", `device.attributes["gpu.nvidia.com"].missing == "x"`), inv, "selects device"},
		{"not compiling", class("new", `device.nosuch()`), inv, "does not compile"},
		{"beyond the budget", class("costly", costlyPrefix(30)+` && device.driver == "example.com"`), inv, "could not be evaluated within the CEL budget"},
	}
	c := chargerWith(t, dra.WithClaimCostBudget(100_000))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.UngovernedClass(t.Context(), tt.class, tt.inv)
			switch {
			case tt.problem == "" && err != nil:
				t.Errorf("problem %v, want none", err)
			case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
				t.Errorf("problem %v, want one saying %q", err, tt.problem)
			}
		})
	}
}
