package dra_test

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestNodeCannotShadowNetworkPool attacks a node publishing, node-locally,
// a pool of the same name as a network-attached pool: an allocation on that
// node names the network device, and the node's 1 MiB copy must not size
// it. The node's slice is a reported conflict and its devices are not used;
// the claim is charged the network device's 80 GiB, before and after the
// allocation.
func TestNodeCannotShadowNetworkPool(t *testing.T) {
	c := newCharger(t)
	yes := true
	net := &resourcev1.ResourceSlice{}
	net.Name = "net"
	net.Spec = resourcev1.ResourceSliceSpec{Driver: nvDriver, AllNodes: &yes, Pool: resourcev1.ResourcePool{Name: "shared", ResourceSliceCount: 1},
		Devices: []resourcev1.Device{gpuDev("gpu-0", "80Gi")}}
	evil := slice("evil", nvDriver, "n1", gpuDev("gpu-0", "1Mi"))
	evil.Spec.Pool.Name = "shared"
	claim := spec(exact("gpu", gpuClass, 1))
	alloc := allocated("gpu", nvDriver, "n1", "gpu-0")
	alloc.Devices.Results[0].Pool = "shared"
	for _, tc := range []struct {
		name     string
		inv      []*resourcev1.ResourceSlice
		conflict bool
	}{
		{"network only", []*resourcev1.ResourceSlice{net}, false},
		{"network and n1's node-local copy", []*resourcev1.ResourceSlice{net, evil}, true},
		{"n1's copy listed first", []*resourcev1.ResourceSlice{evil, net}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range []*resourcev1.AllocationResult{nil, alloc} {
				inv := inventory(tc.inv...)
				ds, err := c.Demands(context.Background(), "c", claim, a, inv, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := ds.Effective().Of(effective.NvidiaName).MemMiB; got != 80*1024 {
					t.Errorf("allocated=%v: charged %d MiB, want 81920 (the network device)", a != nil, got)
				}
			}
			inv := inventory(tc.inv...)
			if !c.Sized(claim, alloc, inv) {
				t.Error("the allocation on the network device is not sized")
			}
			if got := reported(inv.Problems(), "evil"); got != tc.conflict {
				t.Errorf("n1's copy reported: %v, want %v (%v)", got, tc.conflict, inv.Problems())
			}
		})
	}
}

// reported says whether problems name slice as not used.
func reported(problems []dra.SliceProblem, slice string) bool {
	for _, p := range problems {
		if p.Slice == slice && strings.Contains(p.Message, "not used") {
			return true
		}
	}
	return false
}
