package security_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// TestRecreatedNameCountsItsExcess attacks the name rule of the
// reservation count on a real API server: a tenant deletes a small
// recorded pod and at once re-creates its name large, then creates another
// large pod, while the replica's watch (held back) still records the small
// one. A reservation under a name a recorded pod of another UID holds used
// to count nothing (the re-create "fails with AlreadyExists"), so both
// large pods were admitted: 18 GiB live in a 10 GiB quota. Now the
// re-create counts what it asks beyond the recorded pod, and the live pods
// stay within the quota.
func TestRecreatedNameCountsItsExcess(t *testing.T) {
	const limit, delay = 10240, 300 * time.Millisecond
	c := local.ForTest(t, manifests, nil)
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(testhooks.DelayWatches(delay, clock.RealClock{}))
	if err := c.StartWebhookRun(t.Context(), local.WebhookRun{Options: c.Options(), Config: cfg}); err != nil {
		t.Fatal(err)
	}
	ctx, ns := t.Context(), "recreate"
	seed(t, c, ns, limit)
	if err := createPod(ctx, c, creates.GPUPod(ns, "a", "", 1024)); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, ns, func(s ledgerView) bool { return s.Used.Of("nvidia").MemMiB == 1024 && s.Reservations == 0 })
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	errA := createPod(ctx, c, creates.GPUPod(ns, "a", "", 9216))
	errB := createPod(ctx, c, creates.GPUPod(ns, "b", "", 9216))
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var live int64
	for _, p := range pods.Items {
		q := p.Spec.Containers[0].Resources.Limits[corev1.ResourceName("nvidia.com/gpumem")]
		live += q.Value()
	}
	t.Logf("re-created a: %v; b: %v; %d pods live hold %d MiB", errA, errB, len(pods.Items), live)
	if live > limit {
		t.Fatalf("%d MiB live in a %d MiB quota: the re-created name counted less than it asks", live, limit)
	}
	if errA != nil && errB != nil {
		t.Fatalf("both refused (a: %v; b: %v): one of them fits the quota", errA, errB)
	}
}
