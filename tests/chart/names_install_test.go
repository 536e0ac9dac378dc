package chart_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInstallTwoReleases: on a real API server, a second release with its
// own fullnameOverride in its own namespace installs beside the first
// (helm would refuse an object another release owns, cluster-scoped ones
// included), each with its own webhook configurations; a second release
// in the first's namespace is refused by helm, naming the ConfigMap they
// would share; uninstalling one leaves the other whole.
func TestInstallTwoReleases(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	everything := []string{"--set", "guards.hamiPodAnnotations.enabled=true", "--set", "guards.nodeDeviceAnnotations.enabled=true",
		"--set-json", `metrics.reader.subjects=[{"kind":"User","name":"x"}]`, "--set", "crds.keep=false"}
	c.helm(t, append([]string{"install", "gpuadmit", chartDir, "-n", "gpuadmit-system", "--create-namespace"}, everything...)...)
	out := c.helm(t, append([]string{"install", "staging", chartDir, "-n", "gpuadmit-staging", "--create-namespace",
		"--set", "fullnameOverride=gpuadmit-staging", "--set", "crds.install=false", "--set", "dra.enabled=false"}, everything...)...)
	if !strings.Contains(out, "rollout status deployment/gpuadmit-staging-webhook") ||
		!strings.Contains(out, "DRA ResourceClaims are not governed (dra.enabled: false): no claim is charged against the quotas.") {
		t.Errorf("the second release's NOTES.txt does not name its Deployment and say that claims are not governed:\n%s", out)
	}
	for _, name := range []string{"gpuadmit", "gpuadmit-staging"} {
		if _, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ValidatingWebhookConfiguration %s: %v", name, err)
		}
	}
	third, err := c.helmErr(t, "install", "third", chartDir, "-n", "gpuadmit-system", "--set", "fullnameOverride=gpuadmit-third", "--set", "crds.install=false")
	if err == nil || !strings.Contains(third, "gpuadmit-config") {
		t.Errorf("a second release in gpuadmit-system: %v, want helm's refusal naming gpuadmit-config\n%s", err, third)
	}
	c.helm(t, "uninstall", "staging", "-n", "gpuadmit-staging", "--wait")
	if _, err := c.kube.AppsV1().Deployments("gpuadmit-system").Get(ctx, "gpuadmit-webhook", metav1.GetOptions{}); err != nil {
		t.Errorf("uninstalling the second release took the first's webhook: %v", err)
	}
	if _, err := c.kube.RbacV1().ClusterRoles().Get(ctx, "gpuadmit-gpuusage-view", metav1.GetOptions{}); err != nil {
		t.Errorf("uninstalling the second release took the first's ClusterRole: %v", err)
	}
}
