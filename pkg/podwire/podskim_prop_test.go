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
		slim, pod := got.(*corev1.Pod)
		if pod && effective.RequestsAny(&p, fams) {
			checkTimes(t, i, &p, slim)
		}
		kept[pod]++
	}
	if kept[true] < 200 || kept[false] < 200 {
		t.Errorf("%d random pods kept as pods, %d as metadata: the generator hardly tests one of the ways", kept[true], kept[false])
	}
}

// checkTimes: a GPU pod keeps what its budgets' burn is read from
// (pkg/burn): its creationTimestamp and every container state's startedAt
// and finishedAt, init and regular containers, current and last.
func checkTimes(t *testing.T, i int, p, slim *corev1.Pod) {
	t.Helper()
	if !slim.CreationTimestamp.Equal(&p.CreationTimestamp) {
		t.Errorf("pod %d: creationTimestamp %v, want %v", i, slim.CreationTimestamp, p.CreationTimestamp)
	}
	for _, pair := range [][2][]corev1.ContainerStatus{{p.Status.InitContainerStatuses, slim.Status.InitContainerStatuses},
		{p.Status.ContainerStatuses, slim.Status.ContainerStatuses}} {
		if len(pair[0]) != len(pair[1]) {
			t.Fatalf("pod %d: %d container statuses kept of %d", i, len(pair[1]), len(pair[0]))
		}
		for j := range pair[0] {
			for _, st := range [][2]corev1.ContainerState{{pair[0][j].State, pair[1][j].State},
				{pair[0][j].LastTerminationState, pair[1][j].LastTerminationState}} {
				if stateTimes(st[0]) != stateTimes(st[1]) {
					t.Errorf("pod %d status %d: times %q, want %q", i, j, stateTimes(st[1]), stateTimes(st[0]))
				}
			}
		}
	}
}

func stateTimes(st corev1.ContainerState) string {
	out := ""
	if r := st.Running; r != nil {
		out += "R" + r.StartedAt.UTC().String()
	}
	if x := st.Terminated; x != nil {
		out += "T" + x.StartedAt.UTC().String() + "-" + x.FinishedAt.UTC().String()
	}
	return out
}
