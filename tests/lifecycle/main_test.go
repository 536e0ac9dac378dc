// Package lifecycle_test is the integration suite of what gpuadmit charges
// for a pod over its life, on a real kube-apiserver and etcd (built from
// source, driven by envtest through internal/cluster/local) with the
// webhook server wired by pkg/server exactly as cmd/webhook wires it, and
// the kubectl built from source: the seed's four scenarios end to end (an
// init container bigger than the quota denied; init and app never counted
// together; the ledger at the init peak while the init container runs and
// shrunk once it exited 0), the GPUUsage summary following a pod (what
// `kubectl get gpuusage` shows) and who may read and write it, the webhook
// stopped (a non-GPU pod is created, a GPU pod refused), and a restart over
// running pods whose init containers finished (steady state at once).
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package lifecycle_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestLifecycle runs every scenario on one control plane (each in its own
// namespace; the webhook stop/restart scenario last, over the seed's pods).
func TestLifecycle(t *testing.T) {
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	ctx := t.Context()

	t.Run("seed scenarios", func(t *testing.T) {
		if err := c.SeedTeamA(ctx); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, local.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
		// 1: init 30 GiB > the 24 GiB quota: denied with a message naming the quota.
		_, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", "../../examples/pods/scenario1-init30-app4.yaml")
		if err == nil {
			t.Fatal("scenario 1 was admitted")
		}
		local.MustContain(t, "scenario 1 denial", stderr, `denied the request`, `namespace "team-a"`, "30720 MiB", "limit 24576 MiB", `ResourceQuota "gpu-quota"`)
		// 2: init 20 + app 10: admitted as 20 GiB and annotated.
		if _, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", "../../examples/pods/scenario2-init20-app10.yaml"); err != nil {
			t.Fatalf("scenario 2 refused: %s", stderr)
		}
		p, err := c.Kube.CoreV1().Pods(local.TeamA).Get(ctx, "llm-server", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Annotations["gpuadmit.io/effective"]; got != `{"gpu":1,"gpumem":20480,"gpucores":0}` {
			t.Errorf("gpuadmit.io/effective = %q", got)
		}
		// 3: bound, init running: the ledger records 20 GiB, and a 12 GiB pod does not fit.
		if err := c.Bind(ctx, local.TeamA, "llm-server", local.NodeName); err != nil {
			t.Fatal(err)
		}
		if err := c.InitRunning(ctx, local.TeamA, "llm-server"); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, local.TeamA, func(s ledger.NamespaceSnapshot) bool {
			return s.Used.Of("nvidia").MemMiB == 20480 && s.Reservations == 0
		})
		if err := c.CreatePod(ctx, creates.GPUPod(local.TeamA, "small-job", "", 12288)); err == nil {
			t.Fatal("a 12 GiB pod was admitted while the 20 GiB init container runs")
		}
		// 4: init exits 0: the record shrinks to 10 GiB, and the 12 GiB pod is admitted.
		if err := c.InitsDone(ctx, local.TeamA, "llm-server"); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, local.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.Of("nvidia").MemMiB == 10240 })
		if _, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", "../../examples/pods/scenario4-app12.yaml"); err != nil {
			t.Fatalf("scenario 4 refused after the init container exited 0: %s", stderr)
		}
		local.AwaitLedger(t, c, local.TeamA, func(s ledger.NamespaceSnapshot) bool {
			return s.Used.Of("nvidia").MemMiB == 22528 && s.Reservations == 0
		})
	})

	t.Run("GPUUsage status follows a pod's lifecycle", func(t *testing.T) { testStatusFollowsLifecycle(t, c) })
	t.Run("view may read GPUUsage and GPUReservationSet, not write them", func(t *testing.T) { testViewCanReadNotWrite(t, c) })
	t.Run("webhook stopped, then restarted at steady state", func(t *testing.T) { testStopRestart(t, c) })
}
