// Package ha_test runs gpuadmit as three webhook processes behind a
// round-robin proxy with readiness checks (internal/cluster/replicas) on a real
// kube-apiserver and etcd, and tries to get pods past a quota across
// replicas: concurrent bursts, a replica killed mid-burst, a rolling
// restart under load, a replica whose watch lags a long way behind, and a
// replica whose clock runs 5 s ahead (replica-2, in every test).
package ha_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
)

func startHA(t testing.TB, args func(i int) []string) *replicas.Cluster {
	t.Helper()
	return startHAWith(t, func(o *replicas.Options) {
		if args != nil {
			o.Args = args
		}
	})
}

// startHAWith starts three replicas with the options set by f.
func startHAWith(t testing.TB, f func(*replicas.Options)) *replicas.Cluster {
	t.Helper()
	assets := envtestgate.Assets(t)
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	dir := t.TempDir()
	if d := os.Getenv("GPUADMIT_HA_DIR"); d != "" { // keep the replicas' logs
		dir = d
	}
	bin, err := replicas.Build(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := replicas.Options{Assets: assets, Manifests: "../../manifests/webhook", Binary: bin, Config: replicas.QuickConfig, Dir: dir, Args: skewed}
	f(&opts)
	c, err := replicas.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range c.Replicas {
				t.Logf("log of %s: %s", r.Name, r.Log)
			}
			t.Logf("webhook proxy: %d connections accepted, %d closed for want of a ready replica; in rotation now: %v",
				c.Proxy.Accepted(), c.Proxy.Refused(), c.Proxy.Healthy())
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	return c
}

// skewed runs replica-2's clock 5 s ahead of the others'.
func skewed(i int) []string {
	if i == 2 {
		return []string{testhooks.ClockSkew(5 * time.Second)}
	}
	return nil
}

func fastClient(t *testing.T, c *replicas.Cluster) kubernetes.Interface {
	t.Helper()
	k, err := c.FastClient()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// seed creates ns with a gpumem quota.
func seed(t testing.TB, c *replicas.Cluster, ns string, limitMiB int64) {
	t.Helper()
	if limitMiB >= 1e9 {
		// A memory limit of 10^9 or more is read as bytes (pkg/quotacheck): 1<<30 would be 1024 MiB.
		t.Fatalf("seed %s: a limit of %d MiB would be read as bytes; write one under 10^9 MiB", ns, limitMiB)
	}
	if err := c.Seed(t.Context(), ns, fmt.Sprint(limitMiB)); err != nil {
		t.Fatal(err)
	}
}

// livePods sums the memory the live pods of ns ask for (what the API server
// holds: the ground truth).
func livePods(t testing.TB, c *replicas.Cluster, ns string) (int, int64) {
	t.Helper()
	s, err := c.Recount(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return s.Pods, s.Used.Of("nvidia").MemMiB
}

// waitDrained waits until the namespace's GPUReservationSet holds no reservation:
// every replica recorded every admitted pod.
func waitDrained(t *testing.T, c *replicas.Cluster, ns string) {
	t.Helper()
	if _, err := c.WaitDrained(t.Context(), ns, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// ledgersMatch waits until every replica's ledger (its
// gpuadmit_resourcequota series) of ns equals a recount of the live pods:
// gpumem used as the pods ask, nothing reserved.
func ledgersMatch(t testing.TB, c *replicas.Cluster, ns string) {
	t.Helper()
	_, want := livePods(t, c, ns)
	for i, r := range c.Replicas {
		waitForState(t, r.Name+"'s ledger of "+ns+" equals the live pods", func() (bool, string) {
			used, err1 := c.Metric(i, "gpuadmit_resourcequota", `namespace="`+ns+`"`, `resource="nvidia.com/gpumem"`, `type="used"`)
			reserved, err2 := c.Metric(i, "gpuadmit_resourcequota", `namespace="`+ns+`"`, `resource="nvidia.com/gpumem"`, `type="reserved"`)
			return err1 == nil && err2 == nil && int64(used) == want && reserved == 0,
				fmt.Sprintf("%v MiB used, %v reserved (%v %v); the live pods use %d MiB", used, reserved, err1, err2, want)
		})
	}
}
