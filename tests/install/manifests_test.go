// Package install_test checks what an operator installs, on a real
// kube-apiserver and etcd (built from source, driven by envtest) and the
// kubectl built from source: the kustomize tree under manifests/ (webhook
// and nvml-agent) accepted object by object by a server-side dry-run on a
// fresh control plane, and one configuration file shared by the webhook
// (wired from it exactly as cmd/webhook wires it) and `gpuadmit eval
// --config`, which give the same verdicts, denials and warnings; and a
// replica's checks of the registered webhook configurations (its
// reviewTimeout against their timeoutSeconds, its governed resources
// against their matchConditions). The Helm chart these manifests are
// rendered from has its own suite, tests/chart.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package install_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

// TestManifests: the kustomize tree (webhook + nvml-agent) renders and the
// real API server accepts every object with a server-side dry-run (schemas,
// the webhooks' CEL matchConditions, RBAC, the agent's admission policy), on
// a fresh control plane where only the namespace exists.
func TestManifests(t *testing.T) {
	assets := envtestgate.Assets(t)
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := local.WriteAdminKubeconfig(env, kubeconfig); err != nil {
		t.Fatal(err)
	}
	// A dry-run create of a namespaced object needs its namespace to exist:
	// create the namespace for real first, as an installer would.
	if out, err := exec.CommandContext(t.Context(), filepath.Join(assets, "kubectl"), "--kubeconfig", kubeconfig,
		"apply", "-f", "../../manifests/webhook/namespace.yaml").CombinedOutput(); err != nil {
		t.Fatalf("creating the namespace: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), filepath.Join(assets, "kubectl"), "--kubeconfig", kubeconfig,
		"apply", "--dry-run=server", "-k", "../../manifests/")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl apply --dry-run=server -k manifests/: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"deployment.apps/gpuadmit-webhook",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/gpuadmit",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/gpuadmit", "poddisruptionbudget.policy/gpuadmit-webhook",
		"service/gpuadmit-webhook", "role.rbac.authorization.k8s.io/gpuadmit-webhook", "configmap/gpuadmit-policy",
		"daemonset.apps/gpuadmit-nvml-agent", "customresourcedefinition.apiextensions.k8s.io/gpuusages.gpuadmit.io",
		"clusterrole.rbac.authorization.k8s.io/gpuadmit-gpuusage-view"} {
		local.MustContain(t, "dry-run output", stdout.String(), want+" created (server dry run)")
	}
}
