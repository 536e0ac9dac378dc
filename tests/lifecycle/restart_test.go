package lifecycle_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// plainPod is a pod without GPU resources: the webhooks' matchConditions
// keep it away from gpuadmit.
func plainPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}
}

// testStopRestart: with the webhook down, a non-GPU pod is still created
// (matchConditions keep it away from the webhook) and a GPU pod is refused
// (failurePolicy Fail). A new server over running pods whose init
// containers finished starts at steady state.
func testStopRestart(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	steady := c.Namespace(local.TeamA).Used
	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePod(ctx, plainPod(local.TeamA, "web")); err != nil {
		t.Fatalf("a non-GPU pod was refused with the webhook down: %v", err)
	}
	err := c.CreatePod(ctx, creates.GPUPod(local.TeamA, "while-down", "", 1))
	if err == nil {
		t.Fatal("a GPU pod was admitted with the webhook down")
	}
	local.MustContain(t, "refusal with the webhook down", err.Error(), "failed calling webhook")

	if err := c.StartWebhook(ctx, c.Options()); err != nil {
		t.Fatal(err)
	}
	// Ready means synced: the rebuilt ledger must already be at steady state
	// (llm-server counts its 10 GiB app, not its finished 20 GiB init).
	got := c.Namespace(local.TeamA)
	if !got.Used.Equal(steady) || got.Used.Of("nvidia").MemMiB != 22528 {
		t.Fatalf("after restart team-a uses %s, want the steady %s (22528 MiB)", got.Used, steady)
	}
	if err := c.CreatePod(ctx, creates.GPUPod(local.TeamA, "fills-quota", "", 2048)); err != nil {
		t.Fatalf("a pod that fits the steady-state usage was refused after restart: %v", err)
	}
	local.AwaitLedger(t, c, local.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.Of("nvidia").MemMiB == 24576 })
}
