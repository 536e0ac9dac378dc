package webhook_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/devcluster"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

const customPolicy = `package gpuadmit.admission

deny contains msg if {
	input.namespace == "frozen"
	msg := "namespace frozen: GPU pods are frozen by the operator"
}
`

const customPolicyTest = `package gpuadmit.admission_test

import data.gpuadmit.admission

test_frozen if {
	"namespace frozen: GPU pods are frozen by the operator" in admission.deny with input as {"namespace": "frozen"}
}
`

// testPolicyReload: a broken policy ConfigMap is rejected (the active set
// stays and the rejection is written on the ConfigMap); a good one is
// activated without a restart.
func testPolicyReload(t *testing.T, c *devcluster.Cluster) {
	ctx := t.Context()
	if err := c.Seed(ctx, "frozen", "24576"); err != nil {
		t.Fatal(err)
	}
	cms := c.Kube.CoreV1().ConfigMaps(devcluster.Namespace)
	before := c.Server.Engine.Status().Revision
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-policy", Labels: map[string]string{"gpuadmit.io/policy": "true"}},
		Data: map[string]string{"frozen.rego": customPolicy + "deny contains msg if {\n", "frozen_test.rego": customPolicyTest}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	status := waitAnnotation(t, c, "team-policy", "rejected:")
	mustContain(t, "status of the broken policy", status, "frozen.rego", "still active: revision "+before)
	if got := c.Server.Engine.Status().Revision; got != before {
		t.Fatalf("a broken policy replaced the active set: %s -> %s", before, got)
	}
	if err := create(ctx, c, gpuPod("frozen", "while-broken", 0, 1024)); err != nil {
		t.Fatalf("the last good policy set should still admit: %v", err)
	}

	cm, err := cms.Get(ctx, "team-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["frozen.rego"] = customPolicy
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnnotation(t, c, "team-policy", "active:")
	err = create(ctx, c, gpuPod("frozen", "after-reload", 0, 1024))
	if err == nil || !strings.Contains(err.Error(), "GPU pods are frozen by the operator") {
		t.Fatalf("the reloaded policy did not deny: %v", err)
	}
	if err := cms.Delete(ctx, "team-policy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitAnnotation(t *testing.T, c *devcluster.Cluster, name, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cm, err := c.Kube.CoreV1().ConfigMaps(devcluster.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := cm.Annotations[server.PolicyStatusAnnotation]; strings.HasPrefix(v, prefix) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("configmap %s: %s = %q, want prefix %q", name, server.PolicyStatusAnnotation, cm.Annotations[server.PolicyStatusAnnotation], prefix)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testStopRestart: with the webhook down, a non-GPU pod is still created
// (matchConditions keep it away from the webhook) and a GPU pod is refused
// (failurePolicy Fail). A new server over running pods whose init
// containers finished starts at steady state.
func testStopRestart(t *testing.T, c *devcluster.Cluster) {
	ctx := t.Context()
	steady := c.Server.Ledger.Namespace(devcluster.TeamA).Used
	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	if err := create(ctx, c, plainPod(devcluster.TeamA, "web")); err != nil {
		t.Fatalf("a non-GPU pod was refused with the webhook down: %v", err)
	}
	err := create(ctx, c, gpuPod(devcluster.TeamA, "while-down", 0, 1))
	if err == nil {
		t.Fatal("a GPU pod was admitted with the webhook down")
	}
	mustContain(t, "refusal with the webhook down", err.Error(), "failed calling webhook")

	if err := c.StartWebhook(ctx, c.Options()); err != nil {
		t.Fatal(err)
	}
	// Ready means synced: the rebuilt ledger must already be at steady state
	// (llm-server counts its 10 GiB app, not its finished 20 GiB init).
	got := c.Server.Ledger.Namespace(devcluster.TeamA)
	if got.Used != steady || got.Used.MemMiB != 22528 {
		t.Fatalf("after restart team-a uses %s, want the steady %s (22528 MiB)", got.Used, steady)
	}
	if err := create(ctx, c, gpuPod(devcluster.TeamA, "fills-quota", 0, 2048)); err != nil {
		t.Fatalf("a pod that fits the steady-state usage was refused after restart: %v", err)
	}
	waitLedger(t, c, devcluster.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.MemMiB == 24576 })
}
