// Package faults_test is gpuadmit's fault-injection suite: on a real
// kube-apiserver and etcd, each probe tries to get pods past a quota the
// way real clusters do (restarts, stalled and reset watches, an API server
// restart, creates refused later in the admission chain, churn, dry-runs)
// and asserts, in its own namespace, that what was admitted never exceeds
// the limit and that the ledger equals a recount of the live pods. Each
// probe prints its figures (admitted, denied, refused, how long a
// namespace stayed blocked).
package faults_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// options are the webhook server's options in the suite: checks run every
// second so that probes stay short.
func options(c *local.Cluster) server.Options {
	o := c.Options()
	o.Config.Admission.Reservations.ConfirmAfter = &metav1.Duration{Duration: time.Second}
	o.Config.Admission.Watches = &configv1alpha1.Watches{ProbeEvery: &metav1.Duration{Duration: time.Second}, StaleAfter: &metav1.Duration{Duration: 4 * time.Second}}
	return o
}

func startCluster(t *testing.T) *local.Cluster {
	t.Helper()
	return local.ForTest(t, "../../manifests/webhook", func(c *local.Cluster) *server.Options { o := options(c); return &o })
}

// fastClient is a client without client-side rate limits.
func fastClient(t *testing.T, c *local.Cluster) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// settle waits until the server's ledger of ns equals a recount of the
// live pods and holds no reservation, checks the invariants, and returns
// the recount: what the pods use never exceeds the limit.
func settle(t *testing.T, c *local.Cluster, ns string, limitMiB int64) ledger.NamespaceSnapshot {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(30 * time.Second)
	for {
		want, err := c.Recount(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Namespace(ns)
		if got.Used.Equal(want.Used) && got.Pods == want.Pods && got.Reservations == 0 {
			if want.Used.Of("nvidia").MemMiB > limitMiB {
				t.Fatalf("%s: the live pods use %d MiB, over the %d MiB limit", ns, want.Used.Of("nvidia").MemMiB, limitMiB)
			}
			return want
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: ledger never equalled the recount: ledger used %v pods %d reservations %d; recount used %v pods %d",
				ns, got.Used, got.Pods, got.Reservations, want.Used, want.Pods)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seed creates ns with a gpumem limit and waits for the ledger to know it.
func seed(t *testing.T, c *local.Cluster, ns string, limitMiB int64) {
	t.Helper()
	if err := c.Seed(t.Context(), ns, fmt.Sprint(limitMiB)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns+": quota known", func() bool { s := c.Namespace(ns); return s.Limits["nvidia"].MemMiB != nil })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFaults runs every probe on one control plane.
func TestFaults(t *testing.T) {
	c := startCluster(t)
	for _, p := range []struct {
		name string
		run  func(*testing.T, *local.Cluster)
	}{
		{"dry-runs interleaved with creates", probeDryRuns},
		{"creates refused later in the chain: a native pods quota", probeNativeQuota},
		{"creates refused later in the chain: a second webhook", probeSecondWebhook},
		{"creates refused later in the chain: AlreadyExists", probeAlreadyExists},
		{"create/delete churn", probeChurn},
		{"burst across a webhook restart", probeRestartDuringBurst},
		{"restart with thousands of non-GPU pods", probeColdStart},
		{"stalled and reset watch connection", probeStalledWatch},
		{"API server restart", probeAPIServerRestart},
		{"outages: restart, cut 12s, stall 16s", probeOutages},
	} {
		start := time.Now()
		if !t.Run(p.name, func(t *testing.T) { p.run(t, c) }) {
			return
		}
		t.Logf("%s: %s", p.name, time.Since(start).Round(100*time.Millisecond))
	}
}
