package ledger

import (
	"fmt"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

const nvGPU = "gpu.nvidia.com"

// newWholeLedger is a ledger governing NVIDIA's whole GPUs (gpu.nvidia.com,
// sized by the ResourceSlices).
func newWholeLedger(t testing.TB) *Ledger {
	t.Helper()
	fams := []effective.Family{effective.Nvidia()}
	ch, err := dra.NewCharger([]dra.Class{{Name: nvGPU, Family: nvidia, Mode: dra.ModeDevice, Driver: nvGPU,
		MemoryCapacity: "memory", CoresPerDevice: 100}}, fams)
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Families: fams, Claims: ch})
}

// gpuSlice is node's ResourceSlice of whole GPUs (name, memory in MiB pairs).
func gpuSlice(node string, devs map[string]int64) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{Driver: nvGPU, NodeName: &node, Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for name, mib := range devs {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: name,
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: *resource.NewQuantity(mib<<20, resource.BinarySI)}}})
	}
	return s
}

// wholeClaim asks for one whole GPU; allocated to device (pool = node)
// unless device is "", on node (the node selector the scheduler writes for
// a node-local pool: an allocation is resolved on its node).
func wholeClaim(rv, node, device string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: types.UID("claim-1"), ResourceVersion: rv},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: nvGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}
	if device != "" {
		c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: nvGPU, Pool: node, Device: device}}}, NodeSelector: poolNode(node)}
	}
	return c
}

// TestClaimChargeSurvivesSliceAbsence attacks issue 42's 144,384 → 0: a
// claim's first charge is its floor; only an allocation whose every
// device the inventory sizes lowers it (to those devices), and an
// allocation made while the slice is absent lowers nothing, then or when
// the slice returns (re-evaluated: the same rule).
func TestClaimChargeSurvivesSliceAbsence(t *testing.T) {
	big, small := map[string]int64{"gpu-0": 144384, "gpu-1": 40960}, map[string]int64{"gpu-1": 40960}
	type step struct {
		do   func(l *Ledger)
		want int64 // MiB charged after the step
	}
	add := func(devs map[string]int64) func(*Ledger) {
		return func(l *Ledger) { l.UpsertSlice(gpuSlice("n1", devs)) }
	}
	del := func(l *Ledger) { l.DeleteSlice("n1-gpus") }
	claim := func(rv, dev string) func(*Ledger) {
		return func(l *Ledger) { l.UpsertClaim(wholeClaim(rv, "n1", dev)) }
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"issue 42: slice deleted, claim allocated, slice re-added", []step{
			{add(big), 0}, {claim("1", ""), 144384}, {del, 144384}, {claim("2", "gpu-0"), 144384}, {add(big), 144384}, {claim("3", "gpu-0"), 144384}}},
		{"allocated to the small device while it is known: the one lowering", []step{
			{add(big), 0}, {claim("1", ""), 144384}, {claim("2", "gpu-1"), 40960}, {add(big), 40960}}},
		{"allocated to the small device while the slice is absent: lowered only once it is known again", []step{
			{add(big), 0}, {claim("1", ""), 144384}, {del, 144384}, {claim("2", "gpu-1"), 144384}, {claim("3", "gpu-1"), 144384},
			{add(small), 40960}}},
		{"allocated to a device no slice ever publishes: never lowered", []step{
			{add(big), 0}, {claim("1", ""), 144384}, {claim("2", "gpu-9"), 144384}, {add(small), 144384}, {del, 144384}}},
		{"lowered once: a later smaller slice lowers nothing", []step{
			{add(big), 0}, {claim("1", ""), 144384}, {claim("2", "gpu-1"), 40960},
			{add(map[string]int64{"gpu-1": 1}), 40960}, {claim("3", "gpu-1"), 40960}}},
		{"the slice absent from the start: raised when it appears", []step{
			{claim("1", "gpu-0"), 0}, {add(big), 144384}, {del, 144384}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newWholeLedger(t)
			for i, s := range tc.steps {
				s.do(l)
				if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got != s.want {
					t.Fatalf("step %d: charged %d MiB, want %d", i, got, s.want)
				}
			}
			l.DeleteClaim("ns", "c")
			if got := l.Namespace("ns", nil).Used; !got.IsZero() {
				t.Fatalf("after the claim's deletion: %s", got)
			}
		})
	}
}

// TestClaimFloorUnderSliceChurn: a claim recorded and allocated while its
// slice comes and goes (the two watches' handlers run concurrently) is
// never charged below what its allocated device holds, and ends charged
// exactly that once the slice stays; run it with -race.
func TestClaimFloorUnderSliceChurn(t *testing.T) {
	devs := map[string]int64{"gpu-0": 144384, "gpu-1": 40960}
	for round := range 20 {
		l := newWholeLedger(t)
		l.UpsertSlice(gpuSlice("n1", devs))
		l.UpsertClaim(wholeClaim("1", "n1", ""))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 20 {
				l.DeleteSlice("n1-gpus")
				l.UpsertSlice(gpuSlice("n1", devs))
			}
		}()
		for i := range 20 {
			l.UpsertClaim(wholeClaim(fmt.Sprint(i+2), "n1", "gpu-1"))
			if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got < 40960 {
				t.Fatalf("round %d: charged %d MiB, below the allocated device's 40960", round, got)
			}
		}
		<-done
		l.UpsertSlice(gpuSlice("n1", devs))
		if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got != 40960 {
			t.Fatalf("round %d: charged %d MiB once the slice stays, want the allocated device's 40960", round, got)
		}
	}
}
