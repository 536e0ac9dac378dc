package webhook_test

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

	"github.com/gpuadmit/gpuadmit/internal/devcluster"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestWebhook runs every scenario on one control plane (each in its own
// namespace; the webhook stop/restart scenarios last).
func TestWebhook(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()

	t.Run("seed scenarios", func(t *testing.T) {
		if err := c.SeedTeamA(ctx); err != nil {
			t.Fatal(err)
		}
		waitLedger(t, c, devcluster.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Limits.MemMiB != nil })
		// 1: init 30 GiB > the 24 GiB quota: denied with a message naming the quota.
		_, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", "../../examples/pods/scenario1-init30-app4.yaml")
		if err == nil {
			t.Fatal("scenario 1 was admitted")
		}
		mustContain(t, "scenario 1 denial", stderr, `denied the request`, `namespace "team-a"`, "30720 MiB", "limit 24576 MiB", `ResourceQuota "gpu-quota"`)
		// 2: init 20 + app 10: admitted as 20 GiB and annotated.
		if _, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", "../../examples/pods/scenario2-init20-app10.yaml"); err != nil {
			t.Fatalf("scenario 2 refused: %s", stderr)
		}
		p, err := c.Kube.CoreV1().Pods(devcluster.TeamA).Get(ctx, "llm-server", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Annotations["gpuadmit.io/effective"]; got != `{"gpu":1,"gpumem":20480,"gpucores":0}` {
			t.Errorf("gpuadmit.io/effective = %q", got)
		}
		// 3: bound, init running: the ledger records 20 GiB, and a 12 GiB pod does not fit.
		if err := c.Bind(ctx, devcluster.TeamA, "llm-server", devcluster.NodeName); err != nil {
			t.Fatal(err)
		}
		if err := c.InitRunning(ctx, devcluster.TeamA, "llm-server"); err != nil {
			t.Fatal(err)
		}
		waitLedger(t, c, devcluster.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.MemMiB == 20480 && s.Reservations == 0 })
		if err := create(ctx, c, gpuPod(devcluster.TeamA, "small-job", 0, 12288)); err == nil {
			t.Fatal("a 12 GiB pod was admitted while the 20 GiB init container runs")
		}
		// 4: init exits 0: the record shrinks to 10 GiB, and the 12 GiB pod is admitted.
		if err := c.InitsDone(ctx, devcluster.TeamA, "llm-server"); err != nil {
			t.Fatal(err)
		}
		waitLedger(t, c, devcluster.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.MemMiB == 10240 })
		if _, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", "../../examples/pods/scenario4-app12.yaml"); err != nil {
			t.Fatalf("scenario 4 refused after the init container exited 0: %s", stderr)
		}
		waitLedger(t, c, devcluster.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.MemMiB == 22528 && s.Reservations == 0 })
	})

	t.Run("kubectl server-side dry-run charges nothing", func(t *testing.T) {
		if err := c.Seed(ctx, "dry", "24576"); err != nil {
			t.Fatal(err)
		}
		waitLedger(t, c, "dry", func(s ledger.NamespaceSnapshot) bool { return s.Limits.MemMiB != nil })
		for _, tc := range []struct {
			name, manifest string
			ok             bool
			want           []string
		}{
			{"deny message", podYAML("dry", "too-big", 30720), false, []string{"denied the request", "30720 MiB", "limit 24576 MiB"}},
			{"near-limit warning", podYAML("dry", "near", 23000), true, []string{"Warning:", "dry"}},
		} {
			stdout, stderr, err := c.Kubectl(ctx, []byte(tc.manifest), "apply", "--dry-run=server", "-f", "-")
			if (err == nil) != tc.ok {
				t.Fatalf("%s: err = %v; stdout %q stderr %q", tc.name, err, stdout, stderr)
			}
			mustContain(t, tc.name, stdout+stderr, tc.want...)
		}
		time.Sleep(200 * time.Millisecond) // a charge would have shown by now
		if s := c.Server.Ledger.Namespace("dry"); !s.Used.IsZero() || s.Reservations != 0 {
			t.Errorf("dry-run charged the namespace: used %s, %d reservations", s.Used, s.Reservations)
		}
	})

	t.Run("burst of 200 concurrent creates admits exactly what fits", func(t *testing.T) {
		if err := c.Seed(ctx, "burst", "20480"); err != nil {
			t.Fatal(err)
		}
		waitLedger(t, c, "burst", func(s ledger.NamespaceSnapshot) bool { return s.Limits.MemMiB != nil })
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
				p := gpuPod("burst", fmt.Sprintf("b-%03d", i), 0, 1024)
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
		s := waitLedger(t, c, "burst", func(s ledger.NamespaceSnapshot) bool { return s.Pods == 20 && s.Reservations == 0 })
		if s.Used.MemMiB != 20480 {
			t.Errorf("used %d MiB, want 20480", s.Used.MemMiB)
		}
	})

	t.Run("a zero gpumem or percentage is the whole card", func(t *testing.T) { testZeroIsTheWholeCard(t, c) })
	t.Run("pending whole-card and 50 % pods are charged", func(t *testing.T) { testPendingSharesAreCharged(t, c) })
	t.Run("GPUUsage status follows a pod's lifecycle", func(t *testing.T) { testStatusFollowsLifecycle(t, c) })
	t.Run("view may read GPUUsage, not write it", func(t *testing.T) { testViewCanReadNotWrite(t, c) })
	t.Run("policy ConfigMap hot reload", func(t *testing.T) { testPolicyReload(t, c) })
	t.Run("a ConfigMap policy reads pod labels, namespace labels and the user", func(t *testing.T) { testPolicyInputs(t, c) })
	t.Run("webhook stopped, then restarted at steady state", func(t *testing.T) { testStopRestart(t, c) })
}

// podYAML is a one-container GPU pod manifest for kubectl.
func podYAML(ns, name string, mem int64) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  containers:
  - name: app
    image: registry.example/app:1
    resources:
      limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: %d}
`, name, ns, mem)
}
