package feed

import (
	"fmt"
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
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(big)}}}}
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
					ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")}, Tolerations: tol}},
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
			{Name: "fpga"},
			{Name: "gpu", DeviceClassName: nvidiaGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
				Selectors: cel(`device.attributes["` + nvidiaGPU + `"].model == "a100"`), Capacity: capacity(nvidiaGPU+"/memory", "1Gi")}}},
		{Name: "fpga", Exactly: &resourcev1.ExactDeviceRequest{}},
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
// controller owner and pod-claim-name annotation, its requests' names, of
// a governed request its class, mode, count, selectors and the capacity
// requests its class reads (of another request the name alone), and its allocation's results and
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

// TestClaimSelectorCap: a governed claim may make a replica hold at most
// dra.MaxClaimSelectorBytes of selectors. One over it keeps one marker
// instead, and the charger reads the slimmed claim as the whole one:
// invalid, with the same reason (the webhook denies it), never charged less
// than the whole claim. The attack: 4 NVIDIA GPUs selected by a model no
// slice publishes (h200), padded with 10 KiB selectors that select every
// device. Whole, no published device is eligible, so each GPU is the
// family's 141 GiB (577536 MiB); read without its selectors, every GPU of
// the class would be eligible and the claim charged 4 × 80 GiB (327680
// MiB), less than the webhook reserved.
func TestClaimSelectorCap(t *testing.T) {
	ch := slimCharger(t)
	s := newClaimSlimmer(ch)
	padding := `"` + strings.Repeat("p", resourcev1.CELSelectorExpressionMaxLength-8) + `" != ""`
	claim := func(model string, pads int) *resourcev1.ResourceClaim {
		sel := cel(`device.attributes["` + nvidiaGPU + `"].model == "` + model + `"`)
		for range pads {
			sel = append(sel, cel(padding)...)
		}
		return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
				{Name: "fpga", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: fpga, Selectors: sel}},
				{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: nvidiaGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
					Count: 4, Selectors: sel}}}}}}
	}
	opts := map[string]effective.Options{nvidia: {DeviceMemoryMiB: 141 << 10}}
	for _, tt := range []struct {
		model    string
		pads     int
		kept     bool
		wantMiB  int64 // 0: invalid
		maxBytes int
	}{
		{model: "a10", pads: 2, kept: true, wantMiB: 4 * 24 << 10, maxBytes: 3 * resourcev1.CELSelectorExpressionMaxLength},
		{model: "h200", pads: 2, kept: true, wantMiB: 4 * 141 << 10, maxBytes: 3 * resourcev1.CELSelectorExpressionMaxLength},
		{model: "a10", pads: 6, kept: true, wantMiB: 4 * 24 << 10, maxBytes: 7 * resourcev1.CELSelectorExpressionMaxLength},
		{model: "a10", pads: 7, kept: false, maxBytes: 1024},
		{model: "h200", pads: 7, kept: false, maxBytes: 1024},
		{model: "h200", pads: resourcev1.DeviceSelectorsMaxSize - 1, kept: false, maxBytes: 1024},
	} {
		name := fmt.Sprintf("%s with %d padding selectors", tt.model, tt.pads)
		c := claim(tt.model, tt.pads)
		slim := s.claim(c)
		if fp := slim.Spec.Devices.Requests[0].Exactly; fp.DeviceClassName != "" || fp.Selectors != nil {
			t.Errorf("%s: the FPGA request keeps %+v", name, fp)
		}
		sel := slim.Spec.Devices.Requests[1].Exactly.Selectors
		if kept := len(sel) == len(c.Spec.Devices.Requests[1].Exactly.Selectors); kept != tt.kept {
			t.Errorf("%s: %d of %d selectors kept, want all %v", name, len(sel), tt.pads+1, tt.kept)
		}
		if n := protoSize(t, slim); n > tt.maxBytes {
			t.Errorf("%s: %d bytes kept", name, n)
		}
		if got, whole := ch.SelectorBytes(&slim.Spec), ch.SelectorBytes(&c.Spec); got != whole || (whole > dra.MaxClaimSelectorBytes) == tt.kept {
			t.Errorf("%s: the slimmed claim's selectors count %d bytes, the whole one's %d (cap %d)", name, got, whole, dra.MaxClaimSelectorBytes)
		}
		whole, errWhole := chargeOf(ch, &c.Spec, nil, opts)
		got, err := chargeOf(ch, &slim.Spec, nil, opts)
		if err != errWhole || (err == "") != (tt.wantMiB > 0) || (tt.wantMiB == 0 && !strings.Contains(err, "more than the 65536 gpuadmit accepts")) {
			t.Errorf("%s: slimmed %q, whole %q (want invalid: %v)", name, err, errWhole, tt.wantMiB == 0)
		}
		if got.Effective().Of(nvidia).MemMiB != tt.wantMiB || !got.Effective().Equal(whole.Effective()) {
			t.Errorf("%s: slimmed charged %v, whole %v, want %d MiB", name, got.Effective(), whole.Effective(), tt.wantMiB)
		}
	}
}

// governedKeptMax and governedTemplateKeptMax are the most the feed keeps
// of one governed claim and of one governed template (docs/dra.md#memory):
// their protobuf size.
const (
	governedKeptMax         = 160 << 10
	governedTemplateKeptMax = 112 << 10
)

// TestLargestGovernedClaimKeptBounded: of the largest governed claim the
// API server's limits allow (32 requests of 8 subrequests, half of them of
// a governed class, every name and class name at its longest, 100 capacity
// requests, 16 tolerations, 32 allocated devices), with selectors just
// under dra.MaxClaimSelectorBytes or 32 selectors of 10 KiB on every
// subrequest, the feed keeps less than governedKeptMax; of the template
// of the same spec less than governedTemplateKeptMax.
func TestLargestGovernedClaimKeptBounded(t *testing.T) {
	expr := func(n int) resourcev1.DeviceSelector { return cel(`"` + strings.Repeat("s", n-8) + `" != ""`)[0] }
	over := make([]resourcev1.DeviceSelector, resourcev1.DeviceSelectorsMaxSize)
	for i := range over {
		over[i] = expr(resourcev1.CELSelectorExpressionMaxLength)
	}
	var under []resourcev1.DeviceSelector // on one subrequest: dra.MaxClaimSelectorBytes exactly
	for left := dra.MaxClaimSelectorBytes; left > 0; {
		n := min(left-dra.SelectorOverhead, resourcev1.CELSelectorExpressionMaxLength)
		under = append(under, expr(n))
		left -= n + dra.SelectorOverhead
	}
	for _, tt := range []struct {
		name string
		sel  func(i, j int) []resourcev1.DeviceSelector
	}{
		{"selectors over the cap", func(int, int) []resourcev1.DeviceSelector { return over }},
		{"selectors at the cap", func(i, j int) []resourcev1.DeviceSelector {
			if i == 0 && j == 0 {
				return under
			}
			return nil
		}},
	} {
		c := largestGovernedClaim(tt.sel)
		s := newClaimSlimmer(slimCharger(t))
		if n := s.charger.SelectorBytes(&c.Spec); (n > dra.MaxClaimSelectorBytes) != (tt.name == "selectors over the cap") {
			t.Fatalf("%s: %d bytes of selectors", tt.name, n)
		}
		in, kept := protoSize(t, c), protoSize(t, s.claim(c))
		t.Logf("%s: claim: kept %d bytes of %d", tt.name, kept, in)
		if kept > governedKeptMax {
			t.Errorf("%s: kept %d bytes of the largest governed claim, more than %d", tt.name, kept, governedKeptMax)
		}
		tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: c.ObjectMeta, Spec: resourcev1.ResourceClaimTemplateSpec{ObjectMeta: c.ObjectMeta, Spec: c.Spec}}
		in, kept = protoSize(t, tmpl), protoSize(t, s.template(tmpl))
		t.Logf("%s: template: kept %d bytes of %d", tt.name, kept, in)
		if kept > governedTemplateKeptMax {
			t.Errorf("%s: kept %d bytes of the largest governed template, more than %d", tt.name, kept, governedTemplateKeptMax)
		}
	}
}

// largestGovernedClaim is TestLargestGovernedClaimKeptBounded's claim, sel
// the selectors of request i's subrequest j.
func largestGovernedClaim(sel func(i, j int) []resourcev1.DeviceSelector) *resourcev1.ResourceClaim {
	label := func(i int) string { return fmt.Sprintf("%s%03d", strings.Repeat("n", 60), i) }
	class := strings.Repeat("c", 253)
	tol := make([]resourcev1.DeviceToleration, resourcev1.DeviceTolerationsMaxLength)
	for i := range tol {
		tol[i] = resourcev1.DeviceToleration{Key: strings.Repeat("k", 253) + "/" + label(i), Value: label(i)}
	}
	capacity := &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{
		"memory": resource.MustParse("1Gi"), "cores": resource.MustParse("1"), hamiDRA + "/memory": resource.MustParse("1Gi"), hamiDRA + "/cores": resource.MustParse("1")}}
	for i := range 100 {
		capacity.Requests[resourcev1.QualifiedName(class[:200]+"/"+label(i))] = resource.MustParse("1")
	}
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: class, Namespace: label(0), UID: "u", ResourceVersion: "1"}}
	alloc := &resourcev1.AllocationResult{}
	for i := range resourcev1.DeviceRequestsMaxSize {
		req := resourcev1.DeviceRequest{Name: label(i)}
		for j := range resourcev1.FirstAvailableDeviceRequestMaxSize {
			sub := resourcev1.DeviceSubRequest{Name: label(j), DeviceClassName: class, Capacity: capacity, Tolerations: tol, Count: 1}
			if j%2 == 0 {
				sub.DeviceClassName, sub.Selectors = hamiDRA, sel(i, j)
			}
			req.FirstAvailable = append(req.FirstAvailable, sub)
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
		alloc.Devices.Results = append(alloc.Devices.Results, resourcev1.DeviceRequestAllocationResult{Request: label(i) + "/" + label(0),
			Driver: hamiDRA, Pool: class, Device: label(i), Tolerations: tol, ConsumedCapacity: capacity.Requests})
	}
	c.Status.Allocation = alloc
	return c
}
