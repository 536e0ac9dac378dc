package decision

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
)

// TestPodTemplatesShareOneCELBudget attacks a pod naming several
// ResourceClaimTemplates, each of whose claims got a fresh CEL budget: a
// pod of N hostile templates cost N claims' CEL. The pod's review has one
// budget: once its first template's hostile selector spent it, the next
// template's selector is not evaluated and every device counts as
// eligible (80 GiB), where a budget of its own would have evaluated it (the
// 10 GiB device alone).
func TestPodTemplatesShareOneCELBudget(t *testing.T) {
	d, l := claimDecider(t, loadedEngine(t), nil)
	for n := range 8 {
		l.UpsertSlice(nvidiaSlice(fmt.Sprintf("n%d", n), "80Gi", 8))
	}
	l.UpsertSlice(nvidiaSlice("small", "10Gi", 1))
	list := make([]string, 25)
	for i := range list {
		list[i] = fmt.Sprint(i)
	}
	ls := "[" + strings.Join(list, ",") + "]"
	hostile := fmt.Sprintf(`%s.all(a, %s.all(b, %s.all(c, a+b+c >= 0)))`, ls, ls, ls)
	small := `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) < 0`
	l.UpsertTemplate(testclaim.Template("team-a", "hostile", wholeGPUClaim(hostile)))
	l.UpsertTemplate(testclaim.Template("team-a", "small", wholeGPUClaim(small)))
	pod := testclaim.TemplatePod("team-a", "p", "hostile")
	pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "small", ResourceClaimTemplateName: ptr.To("small")})
	view, _, err := d.nodes(pod)
	if err != nil {
		t.Fatal(err)
	}
	checked, _, err := d.podDemand(context.Background(), pod, view)
	if err != nil {
		t.Fatal(err)
	}
	// hostile: its devices count as eligible, 80 GiB; small: not evaluated, 80 GiB.
	if got := checked.Effective().Of("nvidia").MemMiB; got != 2*80*1024 {
		t.Errorf("checked %d MiB, want %d: the second template's selector ran on a budget of its own", got, 2*80*1024)
	}
}

// nvidiaSlice is node's ResourceSlice of n whole NVIDIA GPUs of memory.
func nvidiaSlice(node, memory string, n int) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: &node, Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	typ := "gpu"
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: &typ}},
			Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}}})
	}
	return s
}

// wholeGPUClaim asks for one whole NVIDIA GPU its selector accepts.
func wholeGPUClaim(selector string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount,
			Count: 1, Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: selector}}}}}}}}}
}
