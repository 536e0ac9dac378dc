package workloads_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// testJobGang: the deadlock the gangs prevent, with the real Job
// controller. A namespace with room for five 8 GiB pods holds two; a Job
// of 4 workers names a PodGroup of minCount 4, so only three would fit.
// The attack: while the Job controller retries its workers, not one of
// them is admitted (no partial gang holding GPUs), and the namespace is
// never over its limit; once the two other pods go, the retry admits the
// gang whole and no hold is left once its pods are recorded.
func testJobGang(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns, limit = "gang", 40960
	seed(t, c, ns, limit)
	for i := range 2 {
		if err := c.CreatePod(ctx, creates.GPUPod(ns, fmt.Sprintf("other-%d", i), "", 8192)); err != nil {
			t.Fatalf("other pod %d: %v", i, err)
		}
	}
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}}}
	if _, err := c.Kube.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := job(ns, "train", 4)
	j.Spec.Template = gpuTemplate("train", 8192)
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	j.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
	apply(t, c, j)
	noWorker := func(ctx context.Context) error {
		if n := countPodsCtx(ctx, c, ns, "train"); n != 0 {
			return fmt.Errorf("%d workers of the gang of 4 admitted while only 3 fit: a partial gang", n)
		}
		return nil
	}
	refusals := watchRefusals(t, c, ns, "Job", "train", limit, 3, noWorker)
	local.MustContain(t, "the Job's FailedCreate Event", refusals, "gang "+ns+"/train")
	for i := range 2 {
		if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("other-%d", i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	awaitPods(t, c, ns, "train", 4)
	if s := awaitRecount(t, c, ns); s.Used.Of("nvidia").MemMiB != 4*8192 {
		t.Errorf("used %d MiB once the gang is admitted, want %d", s.Used.Of("nvidia").MemMiB, 4*8192)
	}
}

// countPodsCtx counts the pods labelled app=app in ns (-1 when they cannot
// be listed).
func countPodsCtx(ctx context.Context, c *local.Cluster, ns, app string) int {
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return -1
	}
	return len(pods.Items)
}
