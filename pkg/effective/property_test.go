package effective_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// randomPod builds a pod with random init containers (some of them native
// sidecars, in random order), random app containers, and random GPU requests
// (some containers without any).
func randomPod(r *rand.Rand) *corev1.Pod {
	b := testpod.New("p")
	opts := func() []testpod.Opt {
		if r.IntN(4) == 0 {
			return []testpod.Opt{testpod.CPU("1")}
		}
		o := []testpod.Opt{gpu(int64(r.IntN(4))), mem(int64(r.IntN(40000)))}
		if r.IntN(2) == 0 {
			o = append(o, cores(int64(r.IntN(101))))
		}
		return o
	}
	for i := range r.IntN(5) {
		if r.IntN(3) == 0 {
			b.Sidecar(fmt.Sprintf("s%d", i), opts()...)
		} else {
			b.Init(fmt.Sprintf("i%d", i), opts()...)
		}
	}
	for i := range 1 + r.IntN(4) {
		b.App(fmt.Sprintf("a%d", i), opts()...)
	}
	return b.Build()
}

// TestEffectiveEqualsPodRequests proves that the effective demand equals
// Kubernetes' own PodRequests (KEP-753, the formula ResourceQuota and the
// scheduler use) over random pods with sidecars: each container's parsed
// totals are put into the requests of a shadow pod as plain resources, and
// PodRequests must combine them to exactly what Compute returns.
func TestEffectiveEqualsPodRequests(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 5000 {
		pod := randomPod(r)
		d, err := effective.Compute(pod, defset, effective.Options{DeviceMemoryMiB: 81920})
		if err != nil {
			t.Fatalf("pod %d: %v", n, err)
		}
		shadow := pod.DeepCopy()
		all := append(append([]corev1.Container{}, shadow.Spec.InitContainers...), shadow.Spec.Containers...)
		for i := range all {
			tot := d.Containers[i].Total
			all[i].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
				"gpu":      *resource.NewQuantity(tot.GPU, resource.DecimalSI),
				"gpumem":   *resource.NewQuantity(tot.MemMiB, resource.DecimalSI),
				"gpucores": *resource.NewQuantity(tot.Cores, resource.DecimalSI),
			}}
		}
		copy(shadow.Spec.InitContainers, all[:len(shadow.Spec.InitContainers)])
		copy(shadow.Spec.Containers, all[len(shadow.Spec.InitContainers):])
		req := resourcehelper.PodRequests(shadow, resourcehelper.PodResourcesOptions{})
		got := effective.Vector{GPU: qv(req, "gpu"), MemMiB: qv(req, "gpumem"), Cores: qv(req, "gpucores")}
		if got != d.Effective {
			t.Fatalf("pod %d: PodRequests = %v, Compute = %v\ninit=%v\napps=%v", n, got, d.Effective,
				shadow.Spec.InitContainers, shadow.Spec.Containers)
		}
		// The steady state (every regular init finished) is PodRequests over
		// apps and sidecars alone.
		steady, err := d.From(len(pod.Spec.InitContainers))
		if err != nil {
			t.Fatal(err)
		}
		var inits []corev1.Container
		for _, c := range shadow.Spec.InitContainers {
			if c.RestartPolicy != nil {
				inits = append(inits, c)
			}
		}
		shadow.Spec.InitContainers = inits
		req = resourcehelper.PodRequests(shadow, resourcehelper.PodResourcesOptions{})
		if want := (effective.Vector{GPU: qv(req, "gpu"), MemMiB: qv(req, "gpumem"), Cores: qv(req, "gpucores")}); steady != want {
			t.Fatalf("pod %d: steady = %v, PodRequests without regular inits = %v", n, steady, want)
		}
	}
}

func qv(l corev1.ResourceList, name corev1.ResourceName) int64 {
	q := l[name]
	return q.Value()
}

// TestFromIsMonotone: releasing finished init containers never raises the demand.
func TestFromIsMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 2000 {
		pod := randomPod(r)
		d, err := effective.Compute(pod, defset, effective.Options{DeviceMemoryMiB: 81920})
		if err != nil {
			t.Fatal(err)
		}
		prev := d.Effective
		for from := 1; from <= len(pod.Spec.InitContainers); from++ {
			v, err := d.From(from)
			if err != nil {
				t.Fatal(err)
			}
			if v.GPU > prev.GPU || v.MemMiB > prev.MemMiB || v.Cores > prev.Cores {
				t.Fatalf("pod %d: From(%d) = %v > From(%d) = %v", n, from, v, from-1, prev)
			}
			prev = v
		}
	}
}
