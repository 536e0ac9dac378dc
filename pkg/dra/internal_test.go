package dra

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestAddOverflow: a claim whose requests sum past int64 is rejected (no
// claim the API accepts gets there: counts and capacities are bounded).
func TestAddOverflow(t *testing.T) {
	b := &builder{claim: "claim", c: &Charger{fams: []effective.Family{effective.Nvidia()}}, acc: make([]*effective.Demand, 1)}
	huge := &charged{vec: effective.Vector{GPU: 1, MemMiB: math.MaxInt64}}
	b.add(0, "a", huge)
	b.add(0, "b", huge)
	if len(b.errs) != 1 || b.errs[0].Container != "claim/b" || !strings.Contains(b.errs[0].Reason, "64-bit") {
		t.Fatalf("errs = %v, want one overflow of claim/b", b.errs)
	}
	var fe *effective.FieldError
	if !errors.As(&effective.InvalidError{Errors: b.errs}, &fe) {
		t.Error("not a field error")
	}
}

func TestCeil(t *testing.T) {
	for _, tc := range []struct{ b, want int64 }{{0, 0}, {1, 1}, {mib, 1}, {mib + 1, 2}, {math.MaxInt64, 1 << 43}} {
		if got := ceilMiB(tc.b); got != tc.want {
			t.Errorf("ceilMiB(%d) = %d, want %d", tc.b, got, tc.want)
		}
	}
	if ceilDiv(1536, 1024) != 2 || ceilDiv(2048, 1024) != 2 || ceilDiv(0, 3) != 0 {
		t.Error("ceilDiv")
	}
}

// TestCachesEvict: the compiled selectors and the memo of what selectors
// pick are bounded and evict the least recently used entry: ever-new
// selectors (one per claim) neither grow them without bound nor stop the
// newest from being kept.
func TestCachesEvict(t *testing.T) {
	c, err := NewCharger(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv := NewInventory([]*resourcev1.ResourceSlice{{Spec: resourcev1.ResourceSliceSpec{Driver: "d", NodeName: ptr.To("n"),
		Pool: resourcev1.ResourcePool{Name: "n"}, Devices: []resourcev1.Device{{Name: "x"}}}}})
	first := `device.driver == "0"`
	for i := range 2 * max(celCacheSize, maxPicks) {
		expr := fmt.Sprintf(`device.driver == "%d"`, i)
		res := c.cel.compile(expr)
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		e := &evaluation{ctx: t.Context(), left: DefaultClaimCostBudget, limit: c.cel.limit}
		if got := inv.pick(e, "d", []cel.CompilationResult{res}); len(got) != 0 {
			t.Fatalf("%s picks %d devices, want 0", expr, len(got))
		}
		if _, ok := c.cel.lru.Get(expr); !ok {
			t.Fatalf("the newest selector %d is not cached", i)
		}
		if _, ok := inv.picks.Get(pickKey("d", []cel.CompilationResult{res})); !ok {
			t.Fatalf("the newest pick %d is not memoised", i)
		}
	}
	if n := c.cel.lru.Len(); n > celCacheSize {
		t.Errorf("%d compiled selectors cached, want at most %d", n, celCacheSize)
	}
	if n := inv.picks.Len(); n > maxPicks {
		t.Errorf("%d picks memoised, want at most %d", n, maxPicks)
	}
	if _, ok := c.cel.lru.Get(first); ok {
		t.Error("the least recently used selector was not evicted")
	}
}

// TestBudgetStopsEvaluating: once a claim's budget is spent no device is
// evaluated any more (the memo records only what was evaluated), and every
// device not evaluated is eligible.
func TestBudgetStopsEvaluating(t *testing.T) {
	var devs []resourcev1.Device
	for i := range 100 {
		devs = append(devs, resourcev1.Device{Name: fmt.Sprint("g", i)})
	}
	inv := NewInventory([]*resourcev1.ResourceSlice{{Spec: resourcev1.ResourceSliceSpec{Driver: "d", NodeName: ptr.To("n"),
		Pool: resourcev1.ResourcePool{Name: "n"}, Devices: devs}}})
	c, err := NewCharger(nil, nil, WithClaimCostBudget(10))
	if err != nil {
		t.Fatal(err)
	}
	res := c.cel.compile(`device.driver == "other" && device.driver == "other"`) // false, a few units a device
	e := &evaluation{ctx: t.Context(), left: c.budget, limit: c.cel.limit}
	got := inv.pick(e, "d", []cel.CompilationResult{res})
	m, _ := inv.picks.Get(pickKey("d", []cel.CompilationResult{res}))
	evaluated := len(m.(*pickMemo).steps)
	if evaluated == 0 || evaluated > 10 {
		t.Errorf("%d devices evaluated within a budget of 10 units, want 1..10", evaluated)
	}
	// The device whose evaluation went past the budget is eligible too.
	if len(got) != 100-evaluated && len(got) != 100-evaluated+1 {
		t.Errorf("%d devices eligible after %d evaluated, want every device not evaluated", len(got), evaluated)
	}
}

// TestPickConcurrent: claims of different budgets evaluating the same
// selectors at once on one inventory each get what they get alone (run
// with -race: the memo is appended to while others read its prefix).
func TestPickConcurrent(t *testing.T) {
	var devs []resourcev1.Device
	for i := range 200 {
		devs = append(devs, resourcev1.Device{Name: fmt.Sprint("g", i)})
	}
	slice := &resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: "d", NodeName: ptr.To("n"),
		Pool: resourcev1.ResourcePool{Name: "n"}, Devices: devs}}
	c, err := NewCharger(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := c.cel.compile(`device.driver == "other" && device.driver == "other"`)
	pick := func(inv *Inventory, budget uint64) int {
		e := &evaluation{ctx: t.Context(), left: budget, limit: c.cel.limit}
		return len(inv.pick(e, "d", []cel.CompilationResult{res}))
	}
	budgets := []uint64{5, 50, 100, 400, 10_000}
	want := make([]int, len(budgets))
	for i, b := range budgets {
		want[i] = pick(NewInventory([]*resourcev1.ResourceSlice{slice}), b)
	}
	shared := NewInventory([]*resourcev1.ResourceSlice{slice})
	errs := make(chan error, 8*len(budgets))
	for range 8 {
		for i, b := range budgets {
			go func() {
				if got := pick(shared, b); got != want[i] {
					errs <- fmt.Errorf("budget %d: %d eligible, want %d (as alone)", b, got, want[i])
					return
				}
				errs <- nil
			}()
		}
	}
	for range 8 * len(budgets) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
