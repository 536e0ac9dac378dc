// Package policies_test is the integration suite of the operator's Rego
// policies in ConfigMaps, on a real kube-apiserver and etcd (built from
// source, driven by envtest through internal/cluster/local) with the
// webhook server wired by pkg/server exactly as cmd/webhook wires it, and
// the kubectl built from source: hot reload (a broken ConfigMap rejected,
// the reason written on it and the last good set kept deciding; a good one
// activated without a restart; a replica restarted meanwhile runs the
// accepted set, or stays unready without one), and a ConfigMap policy on pod labels,
// namespace labels and the user's groups through `kubectl --as/--as-group`
// (and its misspelt version rejected, naming the field).
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package policies_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/policysync"
)

// TestPolicies runs every scenario on one control plane (each in its own
// namespace, each removing its ConfigMap when it ends).
func TestPolicies(t *testing.T) {
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	t.Run("policy ConfigMap hot reload", func(t *testing.T) { testPolicyReload(t, c) })
	t.Run("a ConfigMap policy reads pod labels, namespace labels and the user", func(t *testing.T) { testPolicyInputs(t, c) })
	t.Run("a replica restarted while the policy set is rejected keeps the operator's rules", func(t *testing.T) { testRestartWhileRejected(t, c) })
}

// waitAnnotation waits until the policy ConfigMap name's status annotation
// starts with prefix ("active:", "rejected:") and returns it.
func waitAnnotation(t *testing.T, c *local.Cluster, name, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cm, err := c.Kube.CoreV1().ConfigMaps(local.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := cm.Annotations[policysync.StatusAnnotation]; strings.HasPrefix(v, prefix) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("configmap %s: %s = %q, want prefix %q", name, policysync.StatusAnnotation, cm.Annotations[policysync.StatusAnnotation], prefix)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
