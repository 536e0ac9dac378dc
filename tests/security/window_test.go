package security_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// TestForgedReviewsBesideASlowWebhook: another validating webhook on pod
// creates has Kyverno's 10 s timeout, so a reservation whose pod never
// appears is confirmed absent only 12 s after it was made (confirmAfter).
// A client without a certificate posts a forged review for the
// namespace's whole quota every second; from 2.5 s on (the second forged
// review already waits for the first), six genuine 1 GiB pods are created,
// one a second. With admission.reviewTimeout 15 s (what the replica's check
// asks for beside such a webhook) and gpuadmit's webhooks at 20 s, every
// genuine create succeeds on its first try and the live pods stay within
// the quota. (Before: each was denied at once.)
func TestForgedReviewsBesideASlowWebhook(t *testing.T) {
	const limit, genuine = 10240, 6
	c := local.ForTest(t, manifests, func(c *local.Cluster) *server.Options {
		// Before the replica starts: it refuses a review budget its own
		// webhooks' timeoutSeconds do not cover.
		slowWebhookBeside(t, c)
		o := c.Options()
		o.Config.Admission.ReviewTimeout = &metav1.Duration{Duration: 15 * time.Second}
		return &o
	})
	ctx := t.Context()
	seed(t, c, "slow", limit)
	time.Sleep(2 * time.Second) // the replica's cleaner derives confirmAfter (12 s) every second
	floodCtx, stop := context.WithCancel(ctx)
	var forged atomic.Int64
	var attack sync.WaitGroup
	attack.Go(func() {
		cl := attacker(nil, "127.0.0.2")
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			attack.Go(func() {
				uid := fmt.Sprintf("whole-%03d", i)
				forged.Add(1)
				_, _, _ = post(ctx, cl, c, forgedReview("slow", "made-up-"+uid, uid, limit), nil)
			})
			select {
			case <-floodCtx.Done():
				return
			case <-tick.C:
			}
		}
	})
	time.Sleep(2500 * time.Millisecond)
	var failures []string
	var slowest time.Duration
	for i := range genuine {
		start := time.Now()
		if err := createPod(ctx, c, creates.GPUPod("slow", fmt.Sprintf("genuine-%d", i), "", 1024)); err != nil {
			failures = append(failures, err.Error())
		}
		slowest = max(slowest, time.Since(start))
		time.Sleep(time.Second)
	}
	stop()
	attack.Wait()
	t.Logf("%d genuine creates beside a 10 s webhook under %d forged whole-quota reviews: %d failed; slowest %s",
		genuine, forged.Load(), len(failures), slowest.Round(10*time.Millisecond))
	if len(failures) > 0 {
		t.Fatalf("genuine creates failed: %q", failures)
	}
	live, err := c.Recount(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if live.Used.Of("nvidia").MemMiB > limit || live.Pods != genuine {
		t.Fatalf("live: %d pods, %d MiB; want the %d genuine pods within %d MiB", live.Pods, live.Used.Of("nvidia").MemMiB, genuine, limit)
	}
}

// slowWebhookBeside registers another validating webhook on pod creates
// with a 10 s timeout (it listens nowhere: failurePolicy Ignore, so the
// API server goes on at once), and gives gpuadmit's webhooks (mutating and
// validating) 20 s, above the 15 s review budget.
func slowWebhookBeside(t *testing.T, c *local.Cluster) {
	t.Helper()
	ctx := t.Context()
	adm := c.Kube.AdmissionregistrationV1()
	none := admissionregistrationv1.SideEffectClassNone
	other := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kyverno-like"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.kyverno-like.example.com", TimeoutSeconds: ptr.To[int32](10),
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}}}
	if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := adm.ValidatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range v.Webhooks {
		v.Webhooks[i].TimeoutSeconds = ptr.To[int32](20)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := adm.MutatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Webhooks {
		m.Webhooks[i].TimeoutSeconds = ptr.To[int32](20)
	}
	if _, err := adm.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
