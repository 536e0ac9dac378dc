package local

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// ForTest starts a control plane for an integration test (skipping or
// failing it as envtestgate decides when the binaries are missing), with
// logs discarded and everything stopped when the test ends. When opts is
// set and returns options, a webhook server runs with them.
func ForTest(t testing.TB, manifestsDir string, opts func(*Cluster) *server.Options) *Cluster {
	t.Helper()
	return ForTestWith(t, Config{Manifests: manifestsDir}, opts)
}

// ForTestWith is ForTest with the control plane started as cfg says (its
// Assets found by envtestgate).
func ForTestWith(t testing.TB, cfg Config, opts func(*Cluster) *server.Options) *Cluster {
	t.Helper()
	cfg.Assets = envtestgate.Assets(t)
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	c, err := StartWith(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanup cancels the webhook server before stopping the control plane.
	t.Cleanup(func() {
		if t.Failed() && cfg.ControllerManager {
			t.Logf("kube-controller-manager's log, last lines:\n%s", c.ControllerManagerLog(40))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	if opts == nil {
		return c
	}
	if o := opts(c); o != nil {
		if err := c.StartWebhook(t.Context(), *o); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// DefaultWebhook is ForTest's opts for a webhook server with the cluster's
// own Options.
func DefaultWebhook(c *Cluster) *server.Options { o := c.Options(); return &o }

// AwaitLedger is WaitLedger for a test: it returns the running server's
// snapshot of ns once ok holds, and fails t when it does not in time.
func AwaitLedger(t testing.TB, c *Cluster, ns string, ok func(ledger.NamespaceSnapshot) bool) ledger.NamespaceSnapshot {
	t.Helper()
	s, err := c.WaitLedger(t.Context(), ns, ok)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// MustContain fails t unless got (what kubectl printed, a refusal, a
// status annotation: what) contains every want.
func MustContain(t testing.TB, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not contain %q", what, got, w)
		}
	}
}

// FreeLoopbackPort is a port of 127.0.0.1 free now, for a test's own
// listener (a metrics endpoint, an address nothing answers on).
func FreeLoopbackPort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
