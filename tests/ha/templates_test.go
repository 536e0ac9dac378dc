package ha_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestTemplateAfterPodAndForgedClaims replays issue 42's template hole on
// three replicas: a pod names a ResourceClaimTemplate that does not exist
// yet (admitted: nothing of its own), the template (one 10 GiB device) is
// created after it and the pod touched; then 50 claims carrying the
// resource.kubernetes.io/pod-claim-name annotation and a controller owner
// reference to the pod are created at once, spread over the replicas,
// into a 16 GiB quota. Each is decided as any claim: exactly one fits.
// A recount of what the API server holds never exceeds the limit while
// they are created, and every replica's ledger ends equal to it.
func TestTemplateAfterPodAndForgedClaims(t *testing.T) {
	c := startHA(t, func(i int) []string { return append(skewed(i), "--advertise-address=") })
	k := fastClient(t, c)
	const ns, limit = "late-template", 16384
	seed(t, c, ns, limit)
	pod, err := k.CoreV1().Pods(ns).Create(t.Context(), testclaim.TemplatePod(ns, "late", "gpu-10g"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod naming a template that does not exist yet: %v", err)
	}
	tmpl := testclaim.Template(ns, "gpu-10g", testclaim.HAMiDRA(ns, "", 1, 10240, 0))
	if _, err := k.ResourceV1().ResourceClaimTemplates(ns).Create(t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Labels = map[string]string{"touched": "yes"}
	if pod, err = k.CoreV1().Pods(ns).Update(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var most atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() { most.Store(sampleUsed(t, c, ns, stop)) })
	var tl creates.Tally
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			cl := generatedClaim(ns, fmt.Sprintf("late-gpu-%02d", i), pod)
			_, err := k.ResourceV1().ResourceClaims(ns).Create(t.Context(), cl, metav1.CreateOptions{})
			tl.Record(err)
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	s, err := c.Recount(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; %d claims use %d MiB; the most a recount saw: %d MiB", &tl, s.Claims, s.Used.Of("nvidia").MemMiB, most.Load())
	if most.Load() > limit || s.Used.Of("nvidia").MemMiB > limit {
		t.Fatalf("over the %d MiB limit: %d MiB seen, %d MiB now", limit, most.Load(), s.Used.Of("nvidia").MemMiB)
	}
	if tl.Admitted.Load() != 1 || s.Claims != 1 || len(tl.Other) > 0 {
		t.Fatalf("want exactly one claim admitted; %d admitted, %d recorded, other failures %q", tl.Admitted.Load(), s.Claims, tl.Other)
	}
	ledgersMatch(t, c, ns)
}

// generatedClaim is a claim as the claim controller makes it for pod's
// claim "gpu" (or a tenant's copy of one: the same annotation and owner).
func generatedClaim(ns, name string, pod *corev1.Pod) *resourcev1.ResourceClaim {
	return testclaim.GeneratedFor(testclaim.HAMiDRA(ns, name, 1, 10240, 0), pod, "gpu")
}

// sampleUsed recounts ns until stop is closed and returns the most memory
// a recount saw used.
func sampleUsed(t *testing.T, c interface {
	Recount(ctx context.Context, ns string) (ledger.NamespaceSnapshot, error)
}, ns string, stop <-chan struct{}) int64 {
	var most int64
	for {
		if s, err := c.Recount(t.Context(), ns); err == nil {
			most = max(most, s.Used.Of("nvidia").MemMiB)
		}
		select {
		case <-stop:
			return most
		case <-time.After(50 * time.Millisecond):
		}
	}
}
