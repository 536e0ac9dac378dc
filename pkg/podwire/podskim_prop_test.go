package podwire

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

// randomPods fills pods at random, every field of a Pod included; resource
// names, annotation keys and quantities are drawn from sets that hold the
// managed names, the assignment annotations and unmanaged ones.
func randomPods(seed int64) *randfill.Filler {
	names := []corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores", "cpu", "memory", "example.com/fpga"}
	keys := []string{devices.PodAllocatedAnnotation, devices.GpushareIndexAnnotation, "app", "kubectl.kubernetes.io/last-applied-configuration", metav1.InitialEventsAnnotationKey,
		stamp.UserAnnotation, stamp.SignatureAnnotation}
	quantities := []string{"0", "1", "2", "500m", "4096", "1Gi", "50"}
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantities[c.Intn(len(quantities))])
		},
		func(rl *corev1.ResourceList, c randfill.Continue) {
			*rl = corev1.ResourceList{}
			for range c.Intn(4) {
				(*rl)[names[c.Intn(len(names))]] = resource.MustParse(quantities[c.Intn(len(quantities))])
			}
		},
		func(m *map[string]string, c randfill.Continue) {
			*m = map[string]string{}
			for range c.Intn(4) {
				k := keys[c.Intn(len(keys))]
				if c.Intn(3) == 0 {
					k = c.String(8)
				}
				(*m)[k] = c.String(12)
			}
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(1<<31), 0) },
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(metav1.Unix(c.Int63n(1<<31), 0).Time)
		},
		func(f *metav1.FieldsV1, _ randfill.Continue) { f.SetRawString(`{"f:spec":{}}`) },
	)
}

// TestPodSkimRandomPods: the pod client's decoding is PodTransform of the
// pod decoded whole, for random pods (checkSkim); half of them have no
// resource claims, so that both ways of decoding (podscan.go) are tested
// often.
func TestPodSkimRandomPods(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	fill := randomPods(1)
	kept := map[bool]int{}
	for i := range 1000 {
		var p corev1.Pod
		fill.Fill(&p)
		if i%2 == 0 {
			p.Spec.ResourceClaims = nil
		}
		got, err := checkSkim(t, fams, encodePB(t, &p))
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if t.Failed() {
			t.Fatalf("pod %d differs", i)
		}
		_, pod := got.(*corev1.Pod)
		kept[pod]++
	}
	if kept[true] < 200 || kept[false] < 200 {
		t.Errorf("%d random pods kept as pods, %d as metadata: the generator hardly tests one of the ways", kept[true], kept[false])
	}
}
