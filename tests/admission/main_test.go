// Package admission_test is the integration suite of gpuadmit's admission
// decisions on pod creates, on a real kube-apiserver and etcd (built from
// source, driven by envtest through internal/cluster/local) with the
// webhook server wired by pkg/server exactly as cmd/webhook wires it, and
// the kubectl built from source: `kubectl apply --dry-run=server` printing
// the denial or the near-limit warning and charging nothing, 200
// concurrent creates against a quota that fits 20 (exactly 20 admitted),
// and HAMi's charges for a zero, a bare count, a whole card and half cards
// (never fewer MiB than the card the pod may land on), and the Events
// denials leave (one per denial, identical ones counted on one, on the
// pod's owner), and workloads checked as a whole when applied (Deployments,
// their scale subresource and rollouts, Jobs, CronJobs). Each test ends by checking what the namespace's ledger
// holds against its limit.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package admission_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestAdmission runs every scenario on one control plane (each in its own
// namespace).
func TestAdmission(t *testing.T) {
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	ctx := t.Context()

	t.Run("kubectl server-side dry-run charges nothing", func(t *testing.T) {
		if err := c.Seed(ctx, "dry", "24576"); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, "dry", func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
		for _, tc := range []struct {
			name, manifest string
			ok             bool
			want           []string
		}{
			{"deny message", creates.GPUPodYAML("dry", "too-big", 30720), false, []string{"denied the request", "30720 MiB", "limit 24576 MiB"}},
			{"near-limit warning", creates.GPUPodYAML("dry", "near", 23000), true, []string{"Warning:", "dry"}},
		} {
			stdout, stderr, err := c.Kubectl(ctx, []byte(tc.manifest), "apply", "--dry-run=server", "-f", "-")
			if (err == nil) != tc.ok {
				t.Fatalf("%s: err = %v; stdout %q stderr %q", tc.name, err, stdout, stderr)
			}
			local.MustContain(t, tc.name, stdout+stderr, tc.want...)
		}
		time.Sleep(200 * time.Millisecond) // a charge would have shown by now
		if s := c.Namespace("dry"); !s.Used.IsZero() || s.Reservations != 0 {
			t.Errorf("dry-run charged the namespace: used %s, %d reservations", s.Used, s.Reservations)
		}
	})

	t.Run("burst of 200 concurrent creates admits exactly what fits", func(t *testing.T) {
		if err := c.Seed(ctx, "burst", "20480"); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, "burst", func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
		cfg := rest.CopyConfig(c.Config)
		cfg.QPS, cfg.Burst = 2000, 2000
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var admitted atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan string, 200)
		for i := range 200 {
			wg.Go(func() {
				p := creates.GPUPod("burst", fmt.Sprintf("b-%03d", i), "", 1024)
				if _, err := kube.CoreV1().Pods("burst").Create(ctx, p, metav1.CreateOptions{}); err == nil {
					admitted.Add(1)
				} else if !strings.Contains(err.Error(), "limit 20480 MiB") {
					errs <- err.Error()
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("refused for another reason than the quota: %s", e)
		}
		if admitted.Load() != 20 {
			t.Fatalf("admitted %d pods, want exactly 20", admitted.Load())
		}
		s := local.AwaitLedger(t, c, "burst", func(s ledger.NamespaceSnapshot) bool { return s.Pods == 20 && s.Reservations == 0 })
		if s.Used.Of("nvidia").MemMiB != 20480 {
			t.Errorf("used %d MiB, want 20480", s.Used.Of("nvidia").MemMiB)
		}
	})

	t.Run("a zero gpumem or percentage is the whole card", func(t *testing.T) { testZeroIsTheWholeCard(t, c) })
	t.Run("pending whole-card and 50 % pods are charged", func(t *testing.T) { testPendingSharesAreCharged(t, c) })
	t.Run("denials become Events", func(t *testing.T) { testDenialEvents(t, c) })
	t.Run("workloads checked when applied", func(t *testing.T) { testWorkloads(t, c) })
}
