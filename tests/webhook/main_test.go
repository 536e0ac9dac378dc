// Package webhook_test is the integration suite of gpuadmit's admission
// webhook on a real kube-apiserver and etcd (built from source, driven by
// envtest through internal/devcluster) with the webhook server wired by
// pkg/server exactly as cmd/webhook wires it, and the kubectl built from
// source: the seed's four scenarios end to end, server-side dry-run, a burst
// of concurrent creates, policy hot reload, the webhook stopped, a restart
// over running pods, and the manifests against the real API server.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package webhook_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/devcluster"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// startCluster starts the control plane and the webhook for one test.
func startCluster(t *testing.T) *devcluster.Cluster {
	t.Helper()
	return devcluster.ForTest(t, "../../manifests/webhook", func(c *devcluster.Cluster) *server.Options { o := c.Options(); return &o })
}

// gpuPod is a pod with one app container asking for mem MiB of one GPU,
// and optionally an init container asking for initMem MiB.
func gpuPod(ns, name string, initMem, mem int64) *corev1.Pod {
	res := func(m int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{
			"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": *resource.NewQuantity(m, resource.DecimalSI)}}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: res(mem)}}}}
	if initMem > 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1", Resources: res(initMem)}}
	}
	return p
}

func plainPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}
}

func create(ctx context.Context, c *devcluster.Cluster, p *corev1.Pod) error {
	_, err := c.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	return err
}

func waitLedger(t *testing.T, c *devcluster.Cluster, ns string, ok func(ledger.NamespaceSnapshot) bool) ledger.NamespaceSnapshot {
	t.Helper()
	s, err := c.WaitLedger(t.Context(), ns, ok)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not contain %q", what, got, w)
		}
	}
}
