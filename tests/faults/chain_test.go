package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// probeDryRuns: 100 dry-run and 100 real creates at once against a quota
// that fits 20: exactly 20 real ones are admitted and dry-runs charge nothing.
func probeDryRuns(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-dry", 20 * 1024
	seed(t, c, ns, limit)
	k := fastClient(t, c)
	var actual, dry creates.Tally
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			p := creates.GPUPod(ns, fmt.Sprintf("p-%03d", i), "", 1024)
			if i%2 == 0 {
				_, err := k.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				dry.Record(err)
				return
			}
			_, err := k.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
			actual.Record(err)
		})
	}
	wg.Wait()
	got := settle(t, c, ns, limit)
	t.Logf("real creates: %s; dry-runs: %s; recount %d MiB in %d pods", &actual, &dry, got.Used.Of("nvidia").MemMiB, got.Pods)
	if actual.Admitted.Load() != 20 || got.Pods != 20 || len(actual.Other)+len(dry.Other) > 0 {
		t.Fatalf("want exactly 20 real pods admitted and no other failure; real %v, dry %v", actual.Other, dry.Other)
	}
}

// probeNativeQuota: a native "pods: 3" ResourceQuota refuses creates after
// gpuadmit admitted them; their reservations must end within seconds (a
// read confirms the pods do not exist), not hold the namespace.
func probeNativeQuota(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-native", 24 * 1024
	seed(t, c, ns, limit)
	ctx := t.Context()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}}}
	q, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Play the quota controller (no kube-controller-manager runs here): the
	// quota admission plugin keeps status.used current from then on.
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if _, err = c.Kube.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tl creates.Tally
	var refusedByNative int
	for i := range 10 {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, fmt.Sprintf("p-%d", i), "", 2048), metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "exceeded quota") {
			refusedByNative++
			continue
		}
		tl.Record(err)
	}
	start := time.Now()
	waitFor(t, "the refused creates' reservations end", func() bool { return c.Namespace(ns).Reservations == 0 })
	blocked := time.Since(start)
	got := settle(t, c, ns, limit)
	t.Logf("%s; refused by the native pods quota after gpuadmit admitted them: %d; their reservations held the namespace for %s; recount %d MiB",
		&tl, refusedByNative, blocked.Round(100*time.Millisecond), got.Used.Of("nvidia").MemMiB)
	if tl.Admitted.Load() != 3 || refusedByNative != 7 || blocked > 10*time.Second {
		t.Fatalf("want 3 admitted, 7 refused by the native quota and the namespace free within 10s")
	}
	// The room the refused creates held is free: raise the pods quota and take it all.
	if q, err = c.Kube.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("100")
	if q, err = c.Kube.CoreV1().ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	q.Status.Hard = q.Spec.Hard
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "rest", "", limit-3*2048), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the room of the refused creates is still held: %v", err)
	}
	settle(t, c, ns, limit)
}

// probeSecondWebhook: another validating webhook refuses pods that gpuadmit
// admitted (webhooks run in parallel); the reservations end within seconds.
func probeSecondWebhook(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-second", 24 * 1024
	seed(t, c, ns, limit)
	ctx := t.Context()
	var asked atomic.Int64
	// Restart the webhook server with the refusing handler beside gpuadmit's.
	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	refuse := &ctrladmission.Webhook{Handler: ctrladmission.HandlerFunc(func(_ context.Context, r ctrladmission.Request) ctrladmission.Response {
		asked.Add(1)
		return ctrladmission.Denied("the cost-center webhook refuses this pod")
	})}
	if err := c.StartWebhookRun(ctx, local.WebhookRun{Options: options(c), Extra: map[string]http.Handler{"/refuse": refuse}}); err != nil {
		t.Fatal(err)
	}
	gpuadmit, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(*gpuadmit.Webhooks[0].ClientConfig.URL, "/validate-pods", "/refuse", 1)
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cost-center"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "cost-center.example.com", AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: gpuadmit.Webhooks[0].ClientConfig.CABundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:     &fail, SideEffects: &none}}}
	if _, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refusedByOther := 0
	for i := range 5 {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, fmt.Sprintf("p-%d", i), "", 4096), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "cost-center webhook refuses") {
			t.Fatalf("create %d: %v", i, err)
		}
		refusedByOther++
	}
	start := time.Now()
	waitFor(t, "the refused creates' reservations end", func() bool { return c.Namespace(ns).Reservations == 0 })
	blocked := time.Since(start)
	if err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "cost-center", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the other webhook gone", func() bool {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "all", "", limit), metav1.CreateOptions{})
		return err == nil
	})
	got := settle(t, c, ns, limit)
	t.Logf("refused by another webhook after gpuadmit admitted them: %d (it was asked %d times); their reservations held the namespace for %s; then one pod took the whole %d MiB (recount %d MiB)",
		refusedByOther, asked.Load(), blocked.Round(100*time.Millisecond), limit, got.Used.Of("nvidia").MemMiB)
	if blocked > 10*time.Second {
		t.Fatalf("the namespace stayed blocked %s", blocked)
	}
}

// probeAlreadyExists: 23 re-creates of an existing pod name (each fails
// with AlreadyExists after gpuadmit said yes) must not hold the namespace
// at all: their reservations are shadowed by the recorded pod.
func probeAlreadyExists(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-exists", 24 * 1024
	seed(t, c, ns, limit)
	ctx := t.Context()
	if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "x", "", 1024), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "x recorded", func() bool { s := c.Namespace(ns); return s.Pods == 1 && s.Reservations == 0 })
	exists := 0
	for range 23 {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "x", "", 1024), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("re-create of x: %v", err)
		}
		exists++
	}
	// Right away, the rest of the quota is free.
	if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "big", "", limit-1024), metav1.CreateOptions{}); err != nil {
		t.Fatalf("after %d AlreadyExists re-creates the namespace is blocked: %v", exists, err)
	}
	got := settle(t, c, ns, limit)
	t.Logf("%d re-creates failed with AlreadyExists; a %d MiB pod was admitted right after (blocked 0 s); recount %d MiB in %d pods",
		exists, limit-1024, got.Used.Of("nvidia").MemMiB, got.Pods)
}

// probeChurn: creates and deletes from 8 clients for 6 s against a quota of
// 10 pods; a sampler checks the live pods never use more than the limit.
func probeChurn(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-churn", 10 * 1024
	seed(t, c, ns, limit)
	ctx := t.Context()
	k := fastClient(t, c)
	var tl creates.Tally
	var deleted, samples, worst atomic.Int64
	stop := time.Now().Add(6 * time.Second)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; time.Now().Before(stop); i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				_, err := k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, name, "", 1024), metav1.CreateOptions{})
				tl.Record(err)
				if err == nil && r.IntN(2) == 0 {
					if err := k.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err == nil {
						deleted.Add(1)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for time.Now().Before(stop) {
			pods, err := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				n := int64(len(pods.Items))
				samples.Add(1)
				for {
					w := worst.Load()
					if n <= w || worst.CompareAndSwap(w, n) {
						break
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	wg.Wait()
	got := settle(t, c, ns, limit)
	t.Logf("%s; deleted %d; at most %d pods (of 1024 MiB) lived at once over %d samples; recount %d MiB in %d pods",
		&tl, deleted.Load(), worst.Load(), samples.Load(), got.Used.Of("nvidia").MemMiB, got.Pods)
	if worst.Load() > limit/1024 {
		t.Fatalf("%d pods of 1 GiB lived at once under a %d MiB limit", worst.Load(), limit)
	}
}
