package faults_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/cluster/tcpproxy"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// throughProxy restarts the webhook with its connection to the API server
// through a TCP proxy the probe controls; the returned function restores a
// direct webhook for the next probes.
func throughProxy(t *testing.T, c *local.Cluster, tune func(*local.WebhookRun)) (*tcpproxy.Proxy, func()) {
	t.Helper()
	ctx := t.Context()
	host, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := tcpproxy.New(tcpproxy.Options{Backends: []tcpproxy.Backend{{Addr: host.Host}}})
	if err != nil {
		t.Fatal(err)
	}
	proxied := rest.CopyConfig(c.Config)
	proxied.Host = "https://" + proxy.Addr()
	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	run := local.WebhookRun{Options: options(c), Config: proxied}
	if tune != nil {
		tune(&run)
	}
	if err := c.StartWebhookRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	return proxy, func() {
		_ = proxy.Close()
		if err := c.StopWebhook(); err != nil {
			t.Error(err)
		}
		if err := c.StartWebhook(ctx, options(c)); err != nil {
			t.Error(err)
		}
	}
}

// probeOutages: one replica through three outages, each with pods deleted
// and created while it lasts: kube-apiserver restarted, the webhook's
// connection cut for 12 s (refused, then reset), its connection stalled for
// 16 s (nothing flows, nothing closes: past the summary Lease's renew
// deadline). Measured before: after a restart every create got "connection
// refused" from the webhook (the lost summary election ended its manager),
// and the ledger stopped following the cluster. Each time the webhook
// keeps serving, and within 10 s of the API server's return its ledger
// equals a recount of the live pods and no reservation is left for a pod
// that does not exist.
func probeOutages(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-outages", 40 * 1024
	ctx := t.Context()
	proxy, restore := throughProxy(t, c, nil)
	defer restore()
	seed(t, c, ns, limit)
	k := fastClient(t, c)
	next := 0
	create := func(n int) {
		for range n {
			next++
			_, _ = k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, fmt.Sprintf("p-%03d", next), "", 1024), metav1.CreateOptions{})
		}
	}
	create(6)
	settle(t, c, ns, limit)
	for _, o := range []struct {
		name  string
		start func()
		end   func()
	}{
		{"kube-apiserver restarted", func() {}, func() {
			if err := c.RestartAPIServer(); err != nil {
				t.Fatal(err)
			}
		}},
		{"connection cut 12s", func() { proxy.SetDown(true); proxy.Reset() }, func() { time.Sleep(12 * time.Second); proxy.SetDown(false) }},
		{"connection stalled 16s", proxy.Stall, func() { time.Sleep(16 * time.Second); proxy.Resume() }},
	} {
		o.start()
		// Meanwhile, as the cluster's own clients would: two pods go, two are
		// asked for (refused while the webhook cannot write a reservation).
		deleted := 0
		pods, err := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		for i := 0; err == nil && i < len(pods.Items) && deleted < 2; i++ {
			if k.CoreV1().Pods(ns).Delete(ctx, pods.Items[i].Name, metav1.DeleteOptions{}) == nil {
				deleted++
			}
		}
		create(2)
		o.end()
		back := time.Now()
		waitFor(t, o.name+": the webhook serves again", func() bool { return c.Server.NotReady() == nil })
		create(2)
		got := settleWithin(t, c, ns, limit, 10*time.Second)
		noGhosts(t, c, ns)
		t.Logf("%s: %d pods deleted meanwhile; ledger equal to the recount and no reservation left %s after the API server's return (%d pods, %d MiB)",
			o.name, deleted, time.Since(back).Round(100*time.Millisecond), got.Pods, got.Used.Of("nvidia").MemMiB)
	}
}

// settleWithin is settle with a deadline from now.
func settleWithin(t *testing.T, c *local.Cluster, ns string, limitMiB int64, within time.Duration) ledgerSnapshot {
	t.Helper()
	start := time.Now()
	got := settle(t, c, ns, limitMiB)
	if took := time.Since(start); took > within {
		t.Errorf("%s: the ledger equalled the recount only %s later, want within %s", ns, took.Round(100*time.Millisecond), within)
	}
	return got
}

// noGhosts fails when ns's GPUReservationSet holds a reservation for a pod
// that does not exist.
func noGhosts(t *testing.T, c *local.Cluster, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	u, err := c.ReservationSet(ctx, ns)
	if err != nil || u == nil {
		return
	}
	for _, r := range u.Status.Reservations {
		if p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, r.PodName, metav1.GetOptions{}); err != nil || p.UID != r.PodUID {
			t.Errorf("%s: reservation left for pod %s (%s) that does not exist", ns, r.PodName, r.PodUID)
		}
	}
}

type ledgerSnapshot = ledger.NamespaceSnapshot
