package feed

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeobj "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// hostileClaims and hostileHeapBound: a tenant's 10,000 claims of a class
// no gpuadmit webhook sees, ~1 MiB each, leave a replica holding less than
// hostileHeapBound (docs/dra.md says what holding them whole cost).
const (
	hostileClaims    = 10000
	hostileHeapBound = 32 << 20
	// heapCheckEvery is how often the heap is measured while the claims
	// stream in: a feed that keeps them whole fails at the first check,
	// long before it takes the machine's memory.
	heapCheckEvery = 100
)

// countingSink is a ledger that counts the claim events it received.
type countingSink struct {
	*ledger.Ledger
	claims atomic.Int64
}

func (s *countingSink) UpsertClaim(c *resourcev1.ResourceClaim) {
	s.Ledger.UpsertClaim(c)
	s.claims.Add(1)
}

// hostileClaim is claim i of an ungoverned class carrying ~1 MiB: every
// large field is a part of one string of its own, so that keeping any of
// them keeps the whole MiB.
func hostileClaim(i int) *resourcev1.ResourceClaim {
	bulk := strings.Repeat(string(rune('a'+i%26)), 1<<20)
	part := func(k, n int) string { return bulk[(k*n)%(len(bulk)-n):][:n] }
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("hostile-%05d", i), Namespace: "tenant", UID: types.UID(fmt.Sprintf("uid-%05d", i)),
		ResourceVersion: fmt.Sprint(i + 2),
		Labels:          map[string]string{"app": part(1, 63)},
		Annotations: map[string]string{"hostile": part(0, 200<<10), PodClaimNameAnnotation: part(2, 60<<10),
			metav1.InitialEventsAnnotationKey: part(3, 10<<10)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: part(4, 253), UID: "p", Controller: ptr.To(true)}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: part(5, 128), FieldsV1: metav1.NewFieldsV1(part(6, 32<<10))}},
	}}
	reqs := make([]resourcev1.DeviceRequest, resourcev1.DeviceRequestsMaxSize)
	for r := range reqs {
		sel := make([]resourcev1.DeviceSelector, 8)
		for k := range sel {
			sel[k].CEL = &resourcev1.CELDeviceSelector{Expression: part(r*8+k, 2<<10)}
		}
		reqs[r] = resourcev1.DeviceRequest{Name: fmt.Sprintf("r%d", r)}
		if r%2 == 0 {
			reqs[r].Exactly = &resourcev1.ExactDeviceRequest{DeviceClassName: "fpga.example.com", Selectors: sel,
				Tolerations: []resourcev1.DeviceToleration{{Key: "k", Value: part(r, 63)}}}
		} else {
			reqs[r].FirstAvailable = []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "nic.example.com", Selectors: sel}}
		}
	}
	c.Spec.Devices.Requests = reqs
	c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
		Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "fpga.example.com", Parameters: runtimeobj.RawExtension{Raw: []byte(part(7, 10<<10))}}}}}
	c.Status.ReservedFor = make([]resourcev1.ResourceClaimConsumerReference, 64)
	for k := range c.Status.ReservedFor {
		c.Status.ReservedFor[k] = resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: part(k, 253), UID: types.UID(part(k+1, 36))}
	}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "r0", Driver: "fpga.example.com", Pool: part(8, 253), Device: "d"}},
		Config: []resourcev1.DeviceAllocationConfiguration{{Source: resourcev1.AllocationConfigSourceClaim, DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "fpga.example.com", Parameters: runtimeobj.RawExtension{Raw: []byte(part(9, 10<<10))}}}}}}}
	return c
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHostileClaimsHeapBounded: 10,000 claims of ungoverned classes, ~1 MiB
// each (managed fields, annotations, 32 requests of 8 selectors of 2 KiB,
// opaque configuration, a reserved-for list, an allocation), streamed one
// by one through the production feed (NewFeed: the claim informer with its
// transform and handler, the ledger behind it), leave the replica's live
// heap less than hostileHeapBound above what it was before: only each
// claim's identity is held, none is charged, every deletion can still be
// seen.
func TestHostileClaimsHeapBounded(t *testing.T) {
	client := fake.NewClientset()
	w := watch.NewFake()
	client.PrependWatchReactor("resourceclaims", func(clienttesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	sink := &countingSink{Ledger: newClaimLedger(t)}
	f, err := NewFeed(client, sink, Options{Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	f.Start(ctx)
	eventually(ctx, t, "synced", f.Synced)
	caughtUp := func(n int) {
		eventually(ctx, t, fmt.Sprintf("%d claims handled", n), func() bool { return sink.claims.Load() == int64(n) })
	}
	w.Add(hostileClaim(0)) // the watch is open, the informer's own allocations made
	caughtUp(1)
	before := heapInUse()
	grown := func(n int) int64 {
		caughtUp(n)
		return int64(heapInUse()) - int64(before)
	}
	for i := 1; i < hostileClaims; i++ {
		w.Add(hostileClaim(i))
		if (i+1)%heapCheckEvery == 0 {
			if g := grown(i + 1); g > hostileHeapBound {
				t.Fatalf("after %d hostile claims the heap grew %d MiB, more than the %d MiB bound", i+1, g>>20, hostileHeapBound>>20)
			}
		}
	}
	g := grown(hostileClaims)
	t.Logf("%d hostile claims: the live heap grew %.1f MiB (%d bytes a claim)", hostileClaims, float64(g)/(1<<20), g/hostileClaims)
	store := f.factory.Resource().V1().ResourceClaims().Informer().GetStore()
	if n := len(store.ListKeys()); n != hostileClaims {
		t.Fatalf("the informer holds %d claims, want %d (each one's identity)", n, hostileClaims)
	}
	obj, ok, _ := store.GetByKey("tenant/hostile-00042")
	if c, _ := obj.(*resourcev1.ResourceClaim); !ok || c.UID != "uid-00042" || c.ResourceVersion != "44" || len(c.Spec.Devices.Requests) != 0 || c.Annotations != nil || c.Status.Allocation != nil {
		t.Errorf("an ungoverned claim is held as %+v, want its identity alone", obj)
	}
	if s := sink.Namespace("tenant", nil); s.Claims != 0 || !s.Used.IsZero() {
		t.Errorf("ungoverned claims charged: %d claims, %v", s.Claims, s.Used)
	}
}
