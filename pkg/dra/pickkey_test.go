package dra_test

import (
	"context"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
)

// TestPickMemoKeyCollision attacks the memo of evaluated selectors: a
// single selector "P //\x00Q" (CEL reads P, the comment swallows the rest)
// and the list ["P //", "Q"] (P && Q) must not share a memo entry, else the
// second claim reads the first's devices and is charged a 10 GiB device
// instead of the 80 GiB its selector accepts.
func TestPickMemoKeyCollision(t *testing.T) {
	c := newCharger(t)
	fresh := func() *dra.Inventory {
		return inventory(slice("a", nvDriver, "node-a", gpuDev("gpu-0", "80Gi")), slice("b", nvDriver, "node-b", gpuDev("gpu-0", "10Gi")))
	}
	small := `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) < 0`
	alone := memOf(context.Background(), t, c, fresh(), "true //\x00"+small)
	if alone != 80*1024 {
		t.Fatalf("the single selector alone: %d MiB, want 81920", alone)
	}
	inv := fresh()
	if _, err := c.Demands(context.Background(), "a", spec(exact("gpu", gpuClass, 1, "true //", small)), nil, inv, nil); err != nil {
		t.Fatal(err)
	}
	if after := memOf(context.Background(), t, c, inv, "true //\x00"+small); after != alone {
		t.Errorf("charged %d MiB after the list [\"true //\", small] was evaluated, %d MiB alone: another list's memo sized it", after, alone)
	}
}
