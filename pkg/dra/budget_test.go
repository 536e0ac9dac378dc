package dra_test

import (
	"context"
	"testing"
)

// TestSharedBudgetAcrossClaims attacks a review that evaluates several
// claims (a pod's templates) with a fresh CEL budget each: under
// ShareBudget, a hostile first claim spends the review's whole budget, so
// the next claim's selector is not evaluated and its devices count as
// eligible (the worst case, 80 GiB) instead of being evaluated anew (the
// 10 GiB device alone). Without a shared budget each claim has its own.
func TestSharedBudgetAcrossClaims(t *testing.T) {
	c := newCharger(t)
	small := `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) < 0`
	for _, tc := range []struct {
		name   string
		shared bool
		want   int64
	}{
		{"one budget per claim", false, 10 * 1024},
		{"one budget for the review", true, 80 * 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.shared {
				ctx = c.ShareBudget(ctx)
				if c.ShareBudget(ctx) != ctx {
					t.Error("ShareBudget replaced the budget a context carries")
				}
			}
			hostile := hostileInventory(64)
			memOf(ctx, t, c, hostile, costly) // spends a claim's whole budget
			inv := inventory(slice("a", nvDriver, "node-a", gpuDev("gpu-0", "80Gi")), slice("b", nvDriver, "node-b", gpuDev("gpu-0", "10Gi")))
			if got := memOf(ctx, t, c, inv, small); got != tc.want {
				t.Errorf("the second claim charged %d MiB, want %d", got, tc.want)
			}
		})
	}
}
