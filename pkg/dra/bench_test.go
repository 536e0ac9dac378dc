package dra_test

import (
	"context"

	"fmt"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
)

// BenchmarkDemandsWholeDevices: a whole-device claim against a cluster of
// 125 nodes of 8 GPUs (every device's selectors evaluated).
func BenchmarkDemandsWholeDevices(b *testing.B) {
	var ss []*resourcev1.ResourceSlice
	for n := range 125 {
		node := fmt.Sprintf("node-%d", n)
		var devs []resourcev1.Device
		for g := range 8 {
			devs = append(devs, gpuDev(fmt.Sprintf("gpu-%d", g), "80Gi"))
		}
		ss = append(ss, slice(node, nvDriver, node, devs...))
	}
	inv := inventory(ss...)
	c := newCharger(b)
	s := spec(exact("gpu", gpuClass, 2, `device.attributes["gpu.nvidia.com"].type == "gpu"`))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Demands(context.Background(), "claim", s, nil, inv, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDemandsHostileSelector: a claim whose selector costs ~143,000
// cost units per device, over 65 devices (what evaluating it on each would
// take: docs/performance.md): the claim's CEL budget bounds it, on a fresh
// inventory every time (no memo helps).
func BenchmarkDemandsHostileSelector(b *testing.B) {
	c := chargerWith(b)
	s := spec(exact("gpu", gpuClass, 1, costly))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Demands(b.Context(), "claim", s, nil, hostileInventory(64), nil); err != nil {
			b.Fatal(err)
		}
	}
}
