package dra_test

import (
	"context"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// FuzzDemands: whatever the counts, capacities and consumed quantities, a
// claim is charged a non-negative demand or rejected, never a panic.
func FuzzDemands(f *testing.F) {
	f.Add(int64(1), "8589934592", "30", "", uint8(0))
	f.Add(int64(2), "", "", "", uint8(1))
	f.Add(int64(0), "1", "1500m", "9Gi", uint8(2))
	f.Add(int64(-1), "-1", "-5", "-1", uint8(3))
	f.Add(int64(1<<62), "100E", "1e18", "1E", uint8(4))
	f.Add(int64(32), "9223372036854775807", "100", "0.5", uint8(5))
	c := newCharger(f)
	inv := inventory(
		slice("n1-hami", hamiDriver, "n1", hamiDev("gpu-0", "80Gi"), hamiDev("gpu-1", "40Gi")),
		slice("n1-gpu", nvDriver, "n1", gpuDev("gpu-0", "80Gi"), migDev("mig-0", "1g.10gb", "10Gi")),
	)
	f.Fuzz(func(t *testing.T, count int64, mem, cores, used string, shape uint8) {
		s, alloc := fuzzClaim(count, mem, cores, used, shape)
		var opts map[string]effective.Options
		if shape&8 != 0 {
			opts = nvidiaOpts(81920)
		}
		known := inv
		if shape&16 != 0 {
			known = nil
		}
		ds, err := c.Demands(context.Background(), "claim", s, alloc, known, opts)
		if err != nil {
			return
		}
		for _, d := range ds {
			v := d.Effective
			if v.GPU < 0 || v.MemMiB < 0 || v.Cores < 0 {
				t.Fatalf("negative demand %v", v)
			}
			for _, ct := range d.Containers {
				if tot := ct.Total; tot.GPU < 0 || tot.MemMiB < 0 || tot.Cores < 0 {
					t.Fatalf("container %s: negative total %v", ct.Name, tot)
				}
			}
		}
	})
}

// fuzzClaim builds a claim of one request shaped by shape: HAMi-DRA's
// exactly, a whole-device one, All, or firstAvailable, allocated or not.
func fuzzClaim(count int64, mem, cores, used string, shape uint8) (*resourcev1.ResourceClaimSpec, *resourcev1.AllocationResult) {
	r := hamiRequest(count, -1, -1)
	r.Exactly.Count = count
	putQuantity(r.Exactly.Capacity.Requests, "memory", mem)
	putQuantity(r.Exactly.Capacity.Requests, "cores", cores)
	switch shape % 4 {
	case 1:
		r.Exactly.DeviceClassName = gpuClass
	case 2:
		r.Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	case 3:
		e := r.Exactly
		r.Exactly = nil
		r.FirstAvailable = []resourcev1.DeviceSubRequest{
			{Name: "a", DeviceClassName: e.DeviceClassName, Selectors: e.Selectors, Count: e.Count, Capacity: e.Capacity},
			{Name: "b", DeviceClassName: migClass, Count: 1},
		}
	}
	var alloc *resourcev1.AllocationResult
	if shape&4 != 0 {
		req := "gpu"
		if shape%4 == 3 {
			req = "gpu/a"
		}
		alloc = allocated(req, hamiDriver, "n1", "gpu-0", "gpu-1")
		consumed := map[resourcev1.QualifiedName]resource.Quantity{}
		putQuantity(consumed, "memory", used)
		putQuantity(consumed, "cores", used)
		alloc.Devices.Results[0].ConsumedCapacity = consumed
	}
	return spec(r), alloc
}

func putQuantity(m map[resourcev1.QualifiedName]resource.Quantity, name, s string) {
	if q, err := resource.ParseQuantity(s); err == nil {
		m[resourcev1.QualifiedName(name)] = q
	}
}
