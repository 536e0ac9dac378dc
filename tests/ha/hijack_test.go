package ha_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
)

// The driver of NVIDIA's whole GPUs (governed by default, sized by its
// slices' memory capacity) and node-b's 141 GiB device.
const (
	nvDriver   = "gpu.nvidia.com"
	bigGPUMiB  = 144384
	canaryMiB  = 2048
	hijackMiB  = 1
	heldCharge = 2 * bigGPUMiB // the allocated and the unallocated claim
)

// TestPoolHijackAcrossReplicas replays issue 42's pool hijack on three
// replicas: node-b publishes its pool node-b with a 141 GiB gpu-0; a tenant
// holds a claim allocated to it and an unallocated one (each charged
// 144384 MiB), in a quota with 2048 MiB to spare. Node a then publishes
// pool node-b itself, one generation newer, with a 1 MiB gpu-0. Once every
// replica has seen that slice, every replica's charge of the tenant is
// unchanged and a new claim is still decided against 144384 MiB: denied,
// though it would fit were the device the hijacker's 1 MiB (or anything up
// to the 2048 MiB device of node-c, the largest other one). The
// unallocated claim, then allocated to the hijacker's device on node a (as
// a scheduler that believed node a would), stays charged 144384 MiB.
//
// A refused slice changes nothing a replica exposes, so the test sees it
// through a canary published after it on the same watch: a claim of
// another namespace allocated to node-c's gpu-0 before node-c publishes
// it is charged 144384 MiB, and lowered to node-c's 2048 MiB when node-c's
// slice arrives. A replica's informer delivers the slices in the order of
// their resourceVersions, so a replica whose canary charge fell has seen
// the hijacking slice.
func TestPoolHijackAcrossReplicas(t *testing.T) {
	c := startHA(t, func(i int) []string { return append(skewed(i), "--advertise-address=") })
	k := fastClient(t, c)
	const ns, canaryNS, limit = "hijacked", "canary", heldCharge + canaryMiB
	seed(t, c, ns, limit)
	seed(t, c, canaryNS, 1<<29)
	createSlice(t, k, gpuSlice("node-b-gpus", "node-b", "node-b", 1, bigGPUMiB))
	admitClaim(t, k, ns, "held")
	allocate(t, k, ns, "held", "node-b", "node-b")
	admitClaim(t, k, ns, "waiting")
	admitClaim(t, k, canaryNS, "canary")
	allocate(t, k, canaryNS, "canary", "node-c", "node-c")
	everyReplicaUses(t, c, ns, heldCharge)
	everyReplicaUses(t, c, canaryNS, bigGPUMiB)

	createSlice(t, k, gpuSlice("node-a-hijack", "node-a", "node-b", 2, hijackMiB))
	createSlice(t, k, gpuSlice("node-c-gpus", "node-c", "node-c", 1, canaryMiB))
	everyReplicaUses(t, c, canaryNS, canaryMiB)
	// A scheduler that believed node a allocates the waiting claim to the
	// hijacker's device; a second canary claim, recorded after it on the
	// same watch, tells when every replica has seen that allocation.
	allocate(t, k, ns, "waiting", "node-a", "node-b")
	admitClaim(t, k, canaryNS, "canary-2")
	everyReplicaCharges(t, c, canaryNS, fmt.Sprintf("more than %d MiB", canaryMiB), func(used int64) bool { return used > canaryMiB })

	for i, r := range c.Replicas {
		used, err1 := c.Metric(i, "gpuadmit_resourcequota", `namespace="`+ns+`"`, `resource="nvidia.com/gpumem"`, `type="used"`)
		reserved, err2 := c.Metric(i, "gpuadmit_resourcequota", `namespace="`+ns+`"`, `resource="nvidia.com/gpumem"`, `type="reserved"`)
		if err1 != nil || err2 != nil || used != heldCharge || reserved != 0 {
			t.Errorf("%s, after the hijack: %v MiB used, %v reserved (%v %v); want %d MiB, as before", r.Name, used, reserved, err1, err2, heldCharge)
		}
	}
	deniedByEveryReplica(t, c, k, ns)
}

// everyReplicaUses waits until every replica's ledger charges ns want MiB
// of GPU memory.
func everyReplicaUses(t *testing.T, c *replicas.Cluster, ns string, want int64) {
	t.Helper()
	everyReplicaCharges(t, c, ns, fmt.Sprint(want, " MiB"), func(used int64) bool { return used == want })
}

// everyReplicaCharges waits until the GPU memory every replica's ledger
// charges ns is ok (want says what that is).
func everyReplicaCharges(t *testing.T, c *replicas.Cluster, ns, want string, ok func(int64) bool) {
	t.Helper()
	for i, r := range c.Replicas {
		waitForState(t, r.Name+" charges "+ns+" "+want, func() (bool, string) {
			used, err := c.Metric(i, "gpuadmit_resourcequota", `namespace="`+ns+`"`, `resource="nvidia.com/gpumem"`, `type="used"`)
			return err == nil && ok(int64(used)), fmt.Sprintf("%v MiB (%v)", used, err)
		})
	}
}

// deniedByEveryReplica creates one-GPU claims in ns through each replica
// in turn until that replica has decided at least one of them: each must
// be denied against 144384 MiB.
func deniedByEveryReplica(t *testing.T, c *replicas.Cluster, k kubernetes.Interface, ns string) {
	t.Helper()
	decided := func(i int) float64 {
		n, err := c.Metric(i, "gpuadmit_admission_decisions_total", `webhook="validate-claims"`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Each replica in turn gets every new connection (the API server keeps
	// its webhook connections alive, and which replica a pooled connection
	// reaches is chance: with several webhooks sharing the pool, a replica
	// could go a minute without a claim review).
	defer c.Proxy.Pin(-1)
	for i, r := range c.Replicas {
		c.Proxy.Pin(i)
		c.Proxy.Reset()
		before := decided(i)
		for round, deadline := 0, time.Now().Add(time.Minute); decided(i) == before; round++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s decided no claim in %d rounds with every new connection sent to it", r.Name, round)
			}
			probeClaim(t, k, ns, fmt.Sprintf("probe-%d-%02d", i, round))
		}
	}
}

// probeClaim creates a claim of a whole GPU in ns, which must be denied against
// node-b's device.
func probeClaim(t *testing.T, k kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := k.ResourceV1().ResourceClaims(ns).Create(t.Context(), wholeGPUClaim(ns, name), metav1.CreateOptions{})
	if err == nil {
		t.Fatalf("claim %s admitted: a new GPU was decided against less than node-b's %d MiB (the hijacker's %d MiB device hid it)", name, bigGPUMiB, hijackMiB)
	} else if msg := err.Error(); !strings.Contains(msg, "denied") || !strings.Contains(msg, fmt.Sprint(bigGPUMiB)) {
		t.Fatalf("claim %s: %v; want denied against %d MiB", name, err, bigGPUMiB)
	}
}

// gpuSlice is the ResourceSlice node publishes for pool (of generation
// gen): one whole GPU gpu-0 of mib MiB.
func gpuSlice(name, node, pool string, gen, mib int64) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{Driver: nvDriver, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0",
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: ptr.To("gpu")}},
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
					"memory": {Value: *resource.NewQuantity(mib<<20, resource.BinarySI)}}}}}}
}

func createSlice(t *testing.T, k kubernetes.Interface, s *resourcev1.ResourceSlice) {
	t.Helper()
	if _, err := k.ResourceV1().ResourceSlices().Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wholeGPUClaim asks for one whole GPU of NVIDIA's class.
func wholeGPUClaim(ns, name string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: nvDriver, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}
}

// admitClaim creates a whole-GPU claim, retrying while the replica that
// decides it does not know node-b's slice yet (the claim's size unknown).
func admitClaim(t *testing.T, k kubernetes.Interface, ns, name string) {
	t.Helper()
	waitForState(t, "claim "+ns+"/"+name+" admitted", func() (bool, string) {
		_, err := k.ResourceV1().ResourceClaims(ns).Create(t.Context(), wholeGPUClaim(ns, name), metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// allocate writes the allocation of claim ns/name to gpu-0 of pool on node
// as the scheduler writes it: the result and the node it was made on.
func allocate(t *testing.T, k kubernetes.Interface, ns, name, node, pool string) {
	t.Helper()
	cl, err := k.ResourceV1().ResourceClaims(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cl.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: nvDriver, Pool: pool, Device: "gpu-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	if _, err := k.ResourceV1().ResourceClaims(ns).UpdateStatus(t.Context(), cl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
