package policies_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/policysource"
)

// testRestartWhileRejected: a replica restarted while the policy ConfigMap
// holds a set it rejects runs the accepted set, the operator's rule
// included, never the built-in policies alone; without an accepted set it
// stays unready, saying why, until the ConfigMap is fixed.
func testRestartWhileRejected(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "frozen-restart"
	if err := c.Seed(ctx, ns, "24576"); err != nil {
		t.Fatal(err)
	}
	rule := strings.ReplaceAll(customPolicy, `"frozen"`, `"`+ns+`"`)
	test := strings.ReplaceAll(customPolicyTest, `"frozen"`, `"`+ns+`"`)
	cms := c.Kube.CoreV1().ConfigMaps(local.Namespace)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "restart-policy", Labels: map[string]string{"gpuadmit.io/policy": "true"}},
		Data: map[string]string{"restart.rego": rule, "restart_test.rego": test}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnnotation(t, c, "restart-policy", "active:")
	s1 := c.Server.Engine.Status().Revision
	cm.Data["restart.rego"] = rule + "deny contains msg if {\n"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnnotation(t, c, "restart-policy", "rejected:")

	// (a) restarted during the broken edit: the accepted set, S1.
	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	if err := c.StartWebhook(ctx, *local.DefaultWebhook(c)); err != nil {
		t.Fatalf("the restarted replica: %v", err)
	}
	if got := c.Server.Engine.Status().Revision; got != s1 {
		t.Errorf("the restarted replica runs %s, the replica before it ran %s", got, s1)
	}
	err := c.CreatePod(ctx, creates.GPUPod(ns, "after-restart", "", 1024))
	if err == nil || !strings.Contains(err.Error(), "GPU pods are frozen by the operator") {
		t.Fatalf("the restarted replica dropped the operator's rule: %v", err)
	}

	// (b) no accepted set: not ready, saying why, until the set is fixed.
	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, policysource.AcceptedConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.StartWebhookRun(ctx, local.WebhookRun{Options: *local.DefaultWebhook(c), NoWait: true}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "no accepted policy set is stored")
	delete(cm.Data, "restart.rego")
	delete(cm.Data, "restart_test.rego")
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "")
	if err := cms.Delete(ctx, "restart-policy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the server's readiness error contains reason, or
// (reason "") until it is ready.
func waitReady(t *testing.T, c *local.Cluster, reason string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Server.NotReady()
		if reason == "" && err == nil || reason != "" && err != nil && strings.Contains(err.Error(), reason) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness %v, want %q", err, reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
