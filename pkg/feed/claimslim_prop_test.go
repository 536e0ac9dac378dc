package feed

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// slimInventory publishes HAMi-DRA GPUs of 24 and 80 GiB on node1 and
// NVIDIA GPUs (an 80 GiB a100, a 24 GiB a10) on node2.
func slimInventory() *dra.Inventory {
	dev := func(name, attr, value, memory string) resourcev1.Device {
		return resourcev1.Device{Name: name,
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{resourcev1.QualifiedName(attr): {StringValue: ptr.To(value)}},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse(memory)},
				"cores": {Value: resource.MustParse("100")}}}
	}
	slice := func(driver, node string, devs ...resourcev1.Device) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: driver + "-" + node},
			Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
				Devices: devs}}
	}
	return dra.NewInventory([]*resourcev1.ResourceSlice{
		slice(hamiDRA, "node1", dev("gpu-0", "type", "hami-gpu", "24Gi"), dev("gpu-1", "type", "hami-gpu", "80Gi")),
		slice(nvidiaGPU, "node2", dev("gpu-0", "model", "a100", "80Gi"), dev("gpu-1", "model", "a10", "24Gi")),
	})
}

// chargeOf is the charger's demand of a claim spec and allocation.
func chargeOf(ch *dra.Charger, spec *resourcev1.ResourceClaimSpec, alloc *resourcev1.AllocationResult, opts map[string]effective.Options) (effective.Demands, string) {
	ds, err := ch.Demands(context.Background(), "c", spec, alloc, slimInventory(), opts)
	if err != nil {
		return nil, err.Error()
	}
	return ds, ""
}

// TestClaimSlimDemandsUnchanged: for random claims and templates, with
// every request field set at random (classes governed or not, selectors
// that narrow, widen or do not compile, capacity requests of every name,
// modes, counts, tolerations, admin access, constraints, configuration,
// allocations, selectors under and over dra.MaxClaimSelectorBytes,
// requests of ungoverned classes with every field set), the charger's
// demand of what the feed keeps is the demand of the whole claim (its
// error too), it governs and sizes the same claims: slimming drops only
// what the charger does not read.
func TestClaimSlimDemandsUnchanged(t *testing.T) {
	ch := slimCharger(t)
	s := newClaimSlimmer(ch)
	r := rand.New(rand.NewPCG(7, 42))
	seen := map[string]int{}
	for i := range 2000 {
		c := randomClaim(r)
		slim, tmpl := s.claim(c), s.template(&resourcev1.ResourceClaimTemplate{Spec: resourcev1.ResourceClaimTemplateSpec{Spec: c.Spec}})
		governed := ch.Governs(&c.Spec)
		if ch.Governs(&slim.Spec) != governed || ch.Governs(&tmpl.Spec.Spec) != governed {
			t.Fatalf("claim %d: governed %v, slimmed not", i, governed)
		}
		for _, opts := range []map[string]effective.Options{nil, {nvidia: {DeviceMemoryMiB: 40960}}} {
			want, wantErr := chargeOf(ch, &c.Spec, c.Status.Allocation, opts)
			got, gotErr := chargeOf(ch, &slim.Spec, slim.Status.Allocation, opts)
			if !reflect.DeepEqual(got, want) || gotErr != wantErr {
				t.Fatalf("claim %d %+v: slimmed charged %v %q, whole %v %q", i, c.Spec, got, gotErr, want, wantErr)
			}
			got, gotErr = chargeOf(ch, &tmpl.Spec.Spec, nil, opts)
			if want, wantErr = chargeOf(ch, &c.Spec, nil, opts); !reflect.DeepEqual(got, want) || gotErr != wantErr {
				t.Fatalf("template %d: slimmed charged %v %q, whole %v %q", i, got, gotErr, want, wantErr)
			}
			if got, want := ch.Sized(&slim.Spec, slim.Status.Allocation, slimInventory()), ch.Sized(&c.Spec, c.Status.Allocation, slimInventory()); governed && got != want {
				t.Fatalf("claim %d: slimmed sized %v, whole %v", i, got, want)
			}
			switch {
			case !governed:
				seen["ungoverned"]++
			case ch.SelectorBytes(&c.Spec) > dra.MaxClaimSelectorBytes:
				seen["over the selector cap"]++
			case wantErr != "":
				seen["invalid"]++
			case c.Status.Allocation != nil && !want.Effective().IsZero():
				seen["allocated, charged"]++
			case !want.Effective().IsZero():
				seen["charged"]++
			}
		}
	}
	t.Logf("cases: %v", seen)
	for _, k := range []string{"ungoverned", "over the selector cap", "invalid", "charged", "allocated, charged"} {
		if seen[k] < 100 {
			t.Errorf("only %d claims %s: the generator hardly tests them (%v)", seen[k], k, seen)
		}
	}
}

// randomClaim is a claim with every field of its requests drawn at random.
func randomClaim(r *rand.Rand) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	var names []string
	for range 1 + r.IntN(3) {
		req := resourcev1.DeviceRequest{Name: pick(r, "a", "b", "c", "a")}
		if r.IntN(3) > 0 || r.IntN(8) == 0 {
			e := randomAsk(r)
			req.Exactly = &resourcev1.ExactDeviceRequest{DeviceClassName: e.DeviceClassName, Selectors: e.Selectors,
				AllocationMode: e.AllocationMode, Count: e.Count, Capacity: e.Capacity, Tolerations: e.Tolerations}
			if r.IntN(4) == 0 {
				req.Exactly.AdminAccess = ptr.To(r.IntN(2) == 0)
			}
			names = append(names, req.Name)
		}
		if req.Exactly == nil || r.IntN(8) == 0 {
			for range 1 + r.IntN(3) {
				sub := randomAsk(r)
				sub.Name = pick(r, "x", "y", "z")
				req.FirstAvailable = append(req.FirstAvailable, sub)
				names = append(names, req.Name+"/"+sub.Name)
			}
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
	}
	if r.IntN(4) == 0 {
		c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: names[:1], MatchAttribute: ptr.To(resourcev1.FullyQualifiedName(hamiDRA + "/type"))}}
		c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: names[:1], DeviceConfiguration: opaque(hamiDRA, `{}`)}}
	}
	if r.IntN(6) == 0 {
		padSelectors(r, c.Spec.Devices.Requests)
	}
	if r.IntN(2) == 0 {
		c.Status.Allocation = randomAllocation(r, names)
	}
	return c
}

// padSelectors adds to some of reqs' requests and subrequests up to 12
// selectors of 10 KiB that select every device: a claim's governed
// selectors end up under or over dra.MaxClaimSelectorBytes.
func padSelectors(r *rand.Rand, reqs []resourcev1.DeviceRequest) {
	pad := cel(`"` + strings.Repeat("p", resourcev1.CELSelectorExpressionMaxLength-8) + `" != ""`)[0]
	add := func(sel []resourcev1.DeviceSelector) []resourcev1.DeviceSelector {
		for range r.IntN(13) {
			sel = append(sel, pad)
		}
		return sel
	}
	for i := range reqs {
		if e := reqs[i].Exactly; e != nil {
			e.Selectors = add(e.Selectors)
		}
		for j := range reqs[i].FirstAvailable {
			reqs[i].FirstAvailable[j].Selectors = add(reqs[i].FirstAvailable[j].Selectors)
		}
	}
}

// randomAsk is a subrequest (its name aside) drawn at random.
func randomAsk(r *rand.Rand) resourcev1.DeviceSubRequest {
	a := resourcev1.DeviceSubRequest{DeviceClassName: pick(r, hamiDRA, hamiDRA, nvidiaGPU, nvidiaGPU, fpga),
		AllocationMode: resourcev1.DeviceAllocationMode(pick(r, "ExactCount", "ExactCount", "ExactCount", "All", "", "Weird")),
		Count:          int64(r.IntN(4))}
	for range r.IntN(3) {
		a.Selectors = append(a.Selectors, cel(pick(r, "true", "false", `device.attributes["`+hamiDRA+`"].type == "hami-gpu"`,
			`device.capacity["`+nvidiaGPU+`"].memory.compareTo(quantity("40Gi")) < 0`, `device.attributes["`+nvidiaGPU+`"].model == "a100"`,
			`device.driver == "`+nvidiaGPU+`"`, `(((`))...)
	}
	if r.IntN(3) > 0 {
		a.Capacity = &resourcev1.CapacityRequirements{}
		for range r.IntN(4) {
			k := pick(r, "memory", "memory", "cores", hamiDRA+"/memory", hamiDRA+"/cores", nvidiaGPU+"/memory", fpga+"/memory", "junk")
			if a.Capacity.Requests == nil {
				a.Capacity.Requests = map[resourcev1.QualifiedName]resource.Quantity{}
			}
			a.Capacity.Requests[resourcev1.QualifiedName(k)] = resource.MustParse(pick(r, "1Gi", "8Gi", "0", "30", "100", "500m", "-1", "80Gi"))
		}
	}
	if r.IntN(4) == 0 {
		a.Tolerations = []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpExists}}
	}
	return a
}

// randomAllocation allocates some of the request names to devices of the
// inventory (or unknown ones), with consumed capacities at random.
func randomAllocation(r *rand.Rand, names []string) *resourcev1.AllocationResult {
	a := &resourcev1.AllocationResult{NodeSelector: poolNode(pick(r, "node1", "node2"))}
	for range r.IntN(4) {
		res := resourcev1.DeviceRequestAllocationResult{Request: names[r.IntN(len(names))], Driver: pick(r, hamiDRA, nvidiaGPU),
			Pool: pick(r, "node1", "node2"), Device: pick(r, "gpu-0", "gpu-1", "gpu-9")}
		if r.IntN(2) == 0 {
			res.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{
				resourcev1.QualifiedName(pick(r, "memory", "cores", hamiDRA+"/memory")): resource.MustParse(pick(r, "2Gi", "50", "30Gi"))}
		}
		if r.IntN(4) == 0 {
			res.Tolerations = []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpExists}}
		}
		a.Devices.Results = append(a.Devices.Results, res)
	}
	if r.IntN(3) == 0 {
		a.Devices.Config = []resourcev1.DeviceAllocationConfiguration{{Source: resourcev1.AllocationConfigSourceClass, DeviceConfiguration: opaque(hamiDRA, `{}`)}}
	}
	return a
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }
