package security_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// setPodQuota sets the native ResourceQuota "pods" of ns to n pods, its
// status as the quota controller (which does not run here) would.
func setPodQuota(t *testing.T, c *local.Cluster, ns string, n int64) {
	t.Helper()
	ctx := t.Context()
	hard := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(n, resource.DecimalSI)}
	quotas := c.Kube.CoreV1().ResourceQuotas(ns)
	q, err := quotas.Get(ctx, "pods", metav1.GetOptions{})
	if err != nil {
		q, err = quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	}
	q.Spec.Hard = hard
	if q, err = quotas.Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	q.Status.Hard = hard
	if q.Status.Used == nil {
		q.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCreatesRefusedAfterAdmissionDoNotBlock: 24 creates that gpuadmit
// admits and the API server's native pods quota then refuses leave 24
// reservations for pods that never exist (measured before: the namespace
// stayed blocked 16 s after the last one). Once the native quota allows
// pods again, a pod needing the namespace's whole GPU limit is admitted on
// its first try, waiting for those reservations to be confirmed absent
// (about two seconds after they were made, with no other validating
// webhook in the cluster), and nothing of them is left.
func TestCreatesRefusedAfterAdmissionDoNotBlock(t *testing.T) {
	const limit = 24576
	c := startOpen(t)
	ctx := t.Context()
	seed(t, c, "refused", limit)
	setPodQuota(t, c, "refused", 0)
	for i := range 24 {
		err := createPod(ctx, c, creates.GPUPod("refused", fmt.Sprintf("refused-%02d", i), "", 1024))
		if err == nil || !strings.Contains(err.Error(), "exceeded quota") {
			t.Fatalf("create %d: %v; want the native quota's refusal", i, err)
		}
	}
	last := time.Now()
	if u, _ := usage(ctx, t, c, "refused"); u == nil || len(u.Status.Reservations) != 24 {
		t.Fatalf("want the 24 refused creates reserved, got %+v", u)
	}
	setPodQuota(t, c, "refused", 10)
	if err := createPod(ctx, c, creates.GPUPod("refused", "whole", "", limit)); err != nil {
		t.Fatalf("the whole-limit pod after the refused creates: %v", err)
	}
	took := time.Since(last)
	t.Logf("the whole-limit pod was admitted %s after the last refused create", took.Round(10*time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("admitted %s after the last refused create, want < 8s", took)
	}
	if _, err := c.WaitLedger(ctx, "refused", func(s ledgerView) bool { return s.Pods == 1 && s.Reservations == 0 }); err != nil {
		t.Fatal(err)
	}
	u, _ := usage(ctx, t, c, "refused")
	for _, r := range u.Status.Reservations {
		if r.PodName != "whole" {
			t.Errorf("reservation of a pod that never existed left: %+v", r)
		}
	}
}
