package creates

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Tally counts the outcomes of creates.
type Tally struct {
	Admitted, Denied, Unavailable atomic.Int64
	mu                            sync.Mutex
	// Other are failures of another kind; Why the first refusals for
	// unavailability (for a log).
	Other, Why []string
}

// Record classifies one create's outcome: admitted; denied by gpuadmit's
// quota check; refused for unavailability (a replica not ready or not
// reachable, a review that could not be decided: failurePolicy Fail);
// anything else is kept in Other.
func (t *Tally) Record(err error) {
	switch {
	case err == nil:
		t.Admitted.Add(1)
	case strings.Contains(err.Error(), "limit ") && (strings.Contains(err.Error(), "validate.gpuadmit.io") || strings.Contains(err.Error(), "validate-resourceclaims.gpuadmit.io")):
		t.Denied.Add(1)
	case Unavailable(err):
		t.Unavailable.Add(1)
		t.mu.Lock()
		if len(t.Why) < 3 {
			t.Why = append(t.Why, err.Error())
		}
		t.mu.Unlock()
	default:
		t.mu.Lock()
		t.Other = append(t.Other, err.Error())
		t.mu.Unlock()
	}
}

// Unavailable reports whether err refused a create for unavailability
// (Record's third kind): a controller would create the pod again.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "failed calling webhook") || strings.Contains(msg, "not ready to decide") ||
		strings.Contains(msg, "no decision for") || strings.Contains(msg, "EOF") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "connection refused")
}

func (t *Tally) String() string {
	return fmt.Sprintf("%d admitted, %d denied, %d refused for unavailability, %d failed otherwise",
		t.Admitted.Load(), t.Denied.Load(), t.Unavailable.Load(), len(t.Other))
}

// GPUPod asks one device with mem MiB (name, or generateName when name is "").
func GPUPod(ns, name, generateName string, mem int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: generateName, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: oneDevice(mem)}}}}
}

// WithInit gives p an init container asking one device with mem MiB, which
// runs before its app containers, and returns p.
func WithInit(p *corev1.Pod, mem int64) *corev1.Pod {
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1", Resources: oneDevice(mem)}}
	return p
}

// GPUPodYAML is GPUPod's pod (named) as a manifest for kubectl.
func GPUPodYAML(ns, name string, mem int64) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  containers:
  - name: app
    image: registry.example/app:1
    resources:
      limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: %d}
`, name, ns, mem)
}

// oneDevice limits a container to one device with mem MiB.
func oneDevice(mem int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": *resource.NewQuantity(mem, resource.DecimalSI)}}
}

// All creates n pods of mem MiB named prefix-NNN in ns from clients
// goroutines and records each outcome in tl; before create i (0-based, in
// the order they start) it calls before, when set.
func All(ctx context.Context, k kubernetes.Interface, ns, prefix string, n, clients int, mem int64, tl *Tally, before func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if before != nil {
					before(i)
				}
				_, err := k.CoreV1().Pods(ns).Create(ctx, GPUPod(ns, fmt.Sprintf("%s-%03d", prefix, i), "", mem), metav1.CreateOptions{})
				tl.Record(err)
			}
		})
	}
	wg.Wait()
}
