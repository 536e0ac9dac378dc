package ledger

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

const (
	nvidiaGPU = "gpu.nvidia.com" // a governed class, whole devices
	fpga      = "fpga.example.com"
)

// slimCharger governs HAMi-DRA's class (capacity shares) and NVIDIA's
// whole GPUs.
func slimCharger(t testing.TB) *dra.Charger {
	t.Helper()
	ch, err := dra.NewCharger([]dra.Class{
		{Name: hamiDRA, Family: nvidia, Mode: dra.ModeCapacity, Driver: hamiDRA, MemoryCapacity: "memory", CoresCapacity: "cores"},
		{Name: nvidiaGPU, Family: nvidia, Mode: dra.ModeDevice, Driver: nvidiaGPU, MemoryCapacity: "memory", CoresPerDevice: 100},
	}, []effective.Family{effective.Nvidia()})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func cel(expr string) []resourcev1.DeviceSelector {
	return []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}
}

func capacity(kv ...string) *resourcev1.CapacityRequirements {
	c := &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{}}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Requests[resourcev1.QualifiedName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return c
}

func opaque(driver, raw string) resourcev1.DeviceConfiguration {
	return resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(raw)}}}
}

// bloatedClaim is a governed claim (a HAMi-DRA request, a firstAvailable of
// an FPGA or NVIDIA GPUs, an FPGA request) carrying every field the
// charger does not read, large.
func bloatedClaim() *resourcev1.ResourceClaim {
	big := strings.Repeat("x", 200<<10)
	tol := []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpExists}}
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u", ResourceVersion: "9",
		Labels: map[string]string{"app": "x"}, Finalizers: []string{"f"}, GenerateName: "c-",
		Annotations: map[string]string{PodClaimNameAnnotation: "gpu", "hostile": big, metav1.InitialEventsAnnotationKey: "true"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: big[:253], UID: "rs"},
			{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: &metav1.FieldsV1{Raw: []byte(big)}}}}}
	c.Spec.Devices = resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: hamiDRA, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
				Count: 1, AdminAccess: ptr.To(false), Selectors: cel(`device.driver == "` + hamiDRA + `"`), Tolerations: tol,
				Capacity: capacity("memory", "1Gi", "cores", "30", hamiDRA+"/memory", "2Gi", "junk.example/x", "1", "other", "5")}},
			{Name: "any", FirstAvailable: []resourcev1.DeviceSubRequest{
				{Name: "fpga", DeviceClassName: fpga, Selectors: cel(`"` + big[:10<<10] + `" != ""`), Capacity: capacity("memory", "1"), Tolerations: tol},
				{Name: "gpu", DeviceClassName: nvidiaGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
					Selectors: cel(`device.attributes["` + nvidiaGPU + `"].model == "a100"`), Capacity: capacity(nvidiaGPU+"/memory", "1Gi", "cores", "9"), Tolerations: tol}}},
			{Name: "fpga", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: fpga, Count: 1, Selectors: cel(`"` + big[:10<<10] + `" != ""`)}},
		},
		Constraints: []resourcev1.DeviceConstraint{{Requests: []string{"gpu"}, MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("a/b"))}},
		Config:      []resourcev1.DeviceClaimConfiguration{{Requests: []string{"gpu"}, DeviceConfiguration: opaque(hamiDRA, `{"x":"`+big[:10<<10]+`"}`)}},
	}
	c.Status = resourcev1.ResourceClaimStatus{
		Allocation: &resourcev1.AllocationResult{
			Devices: resourcev1.DeviceAllocationResult{
				Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: hamiDRA, Pool: "node1", Device: "gpu-0",
					ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")}}},
				Config: []resourcev1.DeviceAllocationConfiguration{{Source: resourcev1.AllocationConfigSourceClaim, DeviceConfiguration: opaque(hamiDRA, `{"x":"`+big[:10<<10]+`"}`)}},
			},
			NodeSelector: poolNode("node1"),
		},
		ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: big[:253], UID: "x"}},
		Devices:     []resourcev1.AllocatedDeviceStatus{{Driver: hamiDRA, Pool: "node1", Device: "gpu-0", Data: &runtime.RawExtension{Raw: []byte(`"` + big[:10<<10] + `"`)}}},
	}
	return c
}

// slimmedBloatedClaim is what the feed keeps of bloatedClaim.
func slimmedBloatedClaim() *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u", ResourceVersion: "9",
		Annotations:     map[string]string{PodClaimNameAnnotation: "gpu"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
	c.Spec.Devices.Requests = []resourcev1.DeviceRequest{
		{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: hamiDRA, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
			Count: 1, AdminAccess: ptr.To(false), Selectors: cel(`device.driver == "` + hamiDRA + `"`),
			Capacity: capacity("memory", "1Gi", "cores", "30", hamiDRA+"/memory", "2Gi")}},
		{Name: "any", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "fpga", DeviceClassName: fpga},
			{Name: "gpu", DeviceClassName: nvidiaGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
				Selectors: cel(`device.attributes["` + nvidiaGPU + `"].model == "a100"`), Capacity: capacity(nvidiaGPU+"/memory", "1Gi")}}},
		{Name: "fpga", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: fpga, Count: 1}},
	}
	c.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: hamiDRA, Pool: "node1", Device: "gpu-0",
			ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")}}}},
		NodeSelector: poolNode("node1"),
	}
	return c
}

// TestClaimTransformKeepsOnlyWhatIsCharged: of a governed claim with huge
// fields the charger never reads, the feed keeps exactly its identity, its
// controller owner and pod-claim-name annotation, its requests' names,
// classes, modes and counts, a governed request's selectors and the
// capacity requests its class reads, and its allocation's results and
// node selector; of a claim of no governed class its identity alone; the
// same for templates. Idempotent (a watch list is transformed twice), the
// input untouched, tombstones passed through.
func TestClaimTransformKeepsOnlyWhatIsCharged(t *testing.T) {
	ch := slimCharger(t)
	claims, templates := ClaimTransform(ch), TemplateTransform(ch)
	ungoverned := bloatedClaim()
	ungoverned.Spec.Devices.Requests = ungoverned.Spec.Devices.Requests[2:]
	ungoverned.Status.Allocation.Devices.Results[0].Request = "fpga"
	longName := bloatedClaim()
	longName.Annotations[PodClaimNameAnnotation] = strings.Repeat("a", podClaimNameMax+1)
	wantLongName := slimmedBloatedClaim()
	wantLongName.Annotations = nil
	identityOnly := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u", ResourceVersion: "9"}}
	tmpl := func(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaimTemplate {
		return &resourcev1.ResourceClaimTemplate{ObjectMeta: c.ObjectMeta,
			Spec: resourcev1.ResourceClaimTemplateSpec{ObjectMeta: c.ObjectMeta, Spec: c.Spec}}
	}
	wantTmpl := func(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaimTemplate {
		return &resourcev1.ResourceClaimTemplate{ObjectMeta: identityOnly.ObjectMeta, Spec: resourcev1.ResourceClaimTemplateSpec{Spec: c.Spec}}
	}
	tests := []struct {
		name      string
		in, want  runtime.Object
		transform toolscache.TransformFunc
	}{
		{"governed claim", bloatedClaim(), slimmedBloatedClaim(), claims},
		{"ungoverned claim: identity", ungoverned, identityOnly, claims},
		{"a pod-claim-name no controller writes", longName, wantLongName, claims},
		{"governed template", tmpl(bloatedClaim()), wantTmpl(slimmedBloatedClaim()), templates},
		{"ungoverned template: identity", tmpl(ungoverned), wantTmpl(identityOnly), templates},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			full := tt.in.DeepCopyObject()
			got, err := tt.transform(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("kept:\n%s", diff.Diff(tt.want, got))
			}
			if again, err := tt.transform(got); err != nil || !apiequality.Semantic.DeepEqual(again, got) {
				t.Errorf("not idempotent: %v\n%s", err, diff.Diff(got, again))
			}
			if !apiequality.Semantic.DeepEqual(tt.in, full) {
				t.Error("the transform modified its input")
			}
			in, out := protoSize(t, tt.in), protoSize(t, got.(runtime.Object))
			t.Logf("%d bytes kept of %d", out, in)
			if out > 2048 {
				t.Errorf("%d bytes kept of %d", out, in)
			}
		})
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/c"}
	for _, tr := range []toolscache.TransformFunc{claims, templates} {
		if out, err := tr(tomb); err != nil || out != any(tomb) {
			t.Errorf("tombstones pass through unchanged: %v %v", out, err)
		}
		if _, err := tr(&resourcev1.ResourceSlice{}); err == nil {
			t.Error("a slice transformed as a claim or template")
		}
	}
}

// poolNode is the node selector of an allocation on node's pool.
func poolNode(node string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
}

// protoSize is the size of obj's protobuf encoding.
func protoSize(t *testing.T, obj runtime.Object) int {
	t.Helper()
	m, ok := obj.(interface{ Size() int })
	if !ok {
		t.Fatalf("%T has no protobuf size", obj)
	}
	return m.Size()
}

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
	ds, err := ch.Demands("c", spec, alloc, slimInventory(), opts)
	if err != nil {
		return nil, err.Error()
	}
	return ds, ""
}

// TestClaimSlimDemandsUnchanged: for random claims and templates, with
// every request field set at random (classes governed or not, selectors
// that narrow, widen or do not compile, capacity requests of every name,
// modes, counts, tolerations, admin access, constraints, configuration,
// allocations), the charger's demand of what the feed keeps is the demand
// of the whole claim, and it governs the same claims: slimming drops only
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
			switch {
			case !governed:
				seen["ungoverned"]++
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
	for _, k := range []string{"ungoverned", "invalid", "charged", "allocated, charged"} {
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
	if r.IntN(2) == 0 {
		c.Status.Allocation = randomAllocation(r, names)
	}
	return c
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
		a.Devices.Results = append(a.Devices.Results, res)
	}
	if r.IntN(3) == 0 {
		a.Devices.Config = []resourcev1.DeviceAllocationConfiguration{{Source: resourcev1.AllocationConfigSourceClass, DeviceConfiguration: opaque(hamiDRA, `{}`)}}
	}
	return a
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// TestClaimSelectorCap: a governed claim may make a replica hold at most
// claimSelectorBytes of selectors. One over it (a selector that picks the
// 24 GiB a10 among NVIDIA's GPUs and 10 KiB selectors that select every
// device, 8 of them) is kept without its own selectors, and is charged
// the worst case of its class, never less than with them: the 80 GiB
// a100. One under it keeps its selectors.
func TestClaimSelectorCap(t *testing.T) {
	ch := slimCharger(t)
	s := newClaimSlimmer(ch)
	padding := `"` + strings.Repeat("p", resourcev1.CELSelectorExpressionMaxLength-8) + `" != ""`
	claim := func(pads int) *resourcev1.ResourceClaim {
		sel := cel(`device.attributes["` + nvidiaGPU + `"].model == "a10"`)
		for range pads {
			sel = append(sel, cel(padding)...)
		}
		return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
				Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: nvidiaGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1, Selectors: sel}}}}}}
	}
	for _, tt := range []struct {
		pads     int
		kept     bool
		wantMiB  int64
		maxBytes int
	}{
		{pads: 2, kept: true, wantMiB: 24 << 10, maxBytes: 3 * resourcev1.CELSelectorExpressionMaxLength},
		{pads: 8, kept: false, wantMiB: 80 << 10, maxBytes: 1024},
		{pads: resourcev1.DeviceSelectorsMaxSize - 1, kept: false, wantMiB: 80 << 10, maxBytes: 1024},
	} {
		c := claim(tt.pads)
		slim := s.claim(c)
		sel := slim.Spec.Devices.Requests[0].Exactly.Selectors
		if kept := len(sel) == len(c.Spec.Devices.Requests[0].Exactly.Selectors); kept != tt.kept || (!kept && sel != nil) {
			t.Errorf("%d padding selectors: %d of %d kept, want all %v", tt.pads, len(sel), tt.pads+1, tt.kept)
		}
		if n := protoSize(t, slim); n > tt.maxBytes {
			t.Errorf("%d padding selectors: %d bytes kept", tt.pads, n)
		}
		whole, errWhole := chargeOf(ch, &c.Spec, nil, nil)
		got, err := chargeOf(ch, &slim.Spec, nil, nil)
		if err != "" || errWhole != "" || got.Effective().Of(nvidia).MemMiB != tt.wantMiB || whole.Effective().Of(nvidia).MemMiB != 24<<10 {
			t.Errorf("%d padding selectors: slimmed charged %v %s, whole %v %s", tt.pads, got.Effective(), err, whole.Effective(), errWhole)
		}
		if !got.Effective().Max(whole.Effective()).Equal(got.Effective()) {
			t.Errorf("%d padding selectors: slimmed charged %v, less than the whole claim's %v", tt.pads, got.Effective(), whole.Effective())
		}
	}
}
