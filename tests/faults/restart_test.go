package faults_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// probeRestartDuringBurst: 100 creates from 16 clients against a quota that
// fits 20, with the webhook restarted in the middle.
func probeRestartDuringBurst(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-restart", 20 * 1024
	seed(t, c, ns, limit)
	k := fastClient(t, c)
	var tl creates.Tally
	var restart sync.Once
	var restarted sync.WaitGroup
	var downFor time.Duration
	creates.All(t.Context(), k, ns, "p", 100, 16, 1024, &tl, func(i int) {
		if i == 40 {
			restart.Do(func() {
				restarted.Go(func() {
					start := time.Now()
					if err := c.StopWebhook(); err != nil {
						t.Error(err)
					}
					if err := c.StartWebhook(t.Context(), options(c)); err != nil {
						t.Error(err)
					}
					downFor = time.Since(start)
				})
			})
		}
	})
	restarted.Wait()
	got := settle(t, c, ns, limit)
	t.Logf("%s; the webhook was down %s; recount %d MiB in %d pods", &tl, downFor.Round(100*time.Millisecond), got.Used.Of("nvidia").MemMiB, got.Pods)
	if tl.Admitted.Load() > 20 || len(tl.Other) > 0 {
		t.Fatalf("admitted %d of a quota for 20; other failures %q", tl.Admitted.Load(), tl.Other)
	}
}

// probeColdStart: with thousands of non-GPU pods in the cluster and a full
// namespace, the webhook restarts and is hammered before it has synced (as
// a webhook reached by URL, or through an endpoint not yet removed, is):
// nothing may be admitted into the full namespace.
func probeColdStart(t *testing.T, c *local.Cluster) {
	const ns, limit, bulk = "f-cold", 4096, 3000
	ctx := t.Context()
	seed(t, c, ns, limit)
	if err := c.CreateNamespace(ctx, "f-bulk", nil); err != nil {
		t.Fatal(err)
	}
	k := fastClient(t, c)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= bulk; i = next.Add(1) {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d", i), Namespace: "f-bulk"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}
				if _, err := k.CoreV1().Pods("f-bulk").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "full", "", limit), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the namespace is full", func() bool { s := c.Namespace(ns); return s.Pods == 1 && s.Reservations == 0 })

	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	var tl creates.Tally
	var notReady atomic.Int64
	start := time.Now()
	if err := c.StartWebhookRun(ctx, local.WebhookRun{Options: options(c), NoWait: true}); err != nil {
		t.Fatal(err)
	}
	srv := c.Server
	var readyAfter time.Duration
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for srv.NotReady() != nil {
			time.Sleep(5 * time.Millisecond)
		}
		readyAfter = time.Since(start)
		time.Sleep(time.Second) // and a second of decisions after
	})
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				_, err := k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, fmt.Sprintf("w%d-%d", w, i), "", 1024), metav1.CreateOptions{})
				if err != nil && strings.Contains(err.Error(), "not ready to decide") {
					notReady.Add(1)
				}
				tl.Record(err)
			}
		})
	}
	wg.Wait()
	got := settle(t, c, ns, limit)
	t.Logf("%d non-GPU pods in the cluster; ready %s after start; %s (%d of them refused as not ready, naming what); recount %d MiB in %d pods",
		bulk, readyAfter.Round(10*time.Millisecond), &tl, notReady.Load(), got.Used.Of("nvidia").MemMiB, got.Pods)
	if tl.Admitted.Load() != 0 || got.Pods != 1 || len(tl.Other) > 0 {
		t.Fatalf("admitted %d into a full namespace during a cold start; other failures %q", tl.Admitted.Load(), tl.Other)
	}
}

// probeStalledWatch: the webhook's connection to the API server stalls
// (half-open: nothing flows, nothing closes) while the API server can still
// call the webhook; then it is reset. A replica that cannot write a
// reservation cannot answer "allowed": every GPU create is refused (fail
// closed) until the connection recovers, whatever its ledger believes; the
// stale watch must show; after the reset the ledger catches up.
func probeStalledWatch(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-stall", 10 * 1024
	ctx := t.Context()
	proxy, restore := throughProxy(t, c, func(r *local.WebhookRun) {
		r.Options.Config.Admission.ReviewTimeout = &metav1.Duration{Duration: 2 * time.Second}
	})
	defer restore()
	seed(t, c, ns, limit)
	create := func(name string, tl *creates.Tally) {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, name, "", 2048), metav1.CreateOptions{})
		tl.Record(err)
	}
	var before, during, after creates.Tally
	for i := range 2 {
		create(fmt.Sprintf("before-%d", i), &before)
	}
	waitFor(t, "2 pods recorded", func() bool { s := c.Namespace(ns); return s.Pods == 2 && s.Reservations == 0 })

	proxy.Stall()
	stalled := time.Now()
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "before-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		create(fmt.Sprintf("during-%d", i), &during)
	}
	waitFor(t, "the stalled watch is reported stale", func() bool { return c.Server.Stale() != "" })
	stale := c.Server.Stale()
	stallFor := time.Since(stalled)
	proxy.Reset()
	proxy.Resume()
	waitFor(t, "the deletion seen after the reset", func() bool { return c.Namespace(ns).Pods == 1 })
	// Until its progress Lease is renewed again (the first renewal after the
	// reset may conflict with a Lease its informer has not caught up on) the
	// replica still refuses, failing closed; once it says it can decide, it
	// must admit.
	waitFor(t, "the replica deciding again after the reset", func() bool { return c.Server.Blocked() == nil })
	for i := range 3 {
		create(fmt.Sprintf("after-%d", i), &after)
	}
	got := settle(t, c, ns, limit)
	t.Logf("stalled %s: %s; stale: %q; after the reset: %s; the ledger matched the recount: %d MiB in %d pods",
		stallFor.Round(100*time.Millisecond), &during, stale, &after, got.Used.Of("nvidia").MemMiB, got.Pods)
	if during.Admitted.Load() != 0 || during.Unavailable.Load() != 3 || after.Admitted.Load() != 3 {
		t.Fatalf("want every create refused during the stall (nothing can be reserved) and 3 admitted after it; refused after it because %q", after.Why)
	}
}

// probeAPIServerRestart: kube-apiserver restarts while clients create pods;
// the webhook's watches reconnect and nothing is over-admitted.
func probeAPIServerRestart(t *testing.T, c *local.Cluster) {
	const ns, limit = "f-apiserver", 10 * 1024
	seed(t, c, ns, limit)
	k := fastClient(t, c)
	var tl creates.Tally
	var restartTook time.Duration
	var restartErr error
	stop := time.Now().Add(8 * time.Second)
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(time.Second)
		start := time.Now()
		restartErr = c.RestartAPIServer()
		restartTook = time.Since(start)
	})
	var down atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				_, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, fmt.Sprintf("w%d-%d", w, i), "", 1024), metav1.CreateOptions{})
				if apiServerDown(err) {
					down.Add(1)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				tl.Record(err)
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if restartErr != nil {
		t.Fatal(restartErr)
	}
	waitFor(t, "the webhook decides again", func() bool { return c.Server.NotReady() == nil })
	if _, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, "after", "", 1024), metav1.CreateOptions{}); err != nil &&
		!strings.Contains(err.Error(), "limit ") {
		t.Fatalf("after the restart: %v", err)
	}
	got := settle(t, c, ns, limit)
	t.Logf("kube-apiserver restarted in %s; %s; %d creates failed while it was down; recount %d MiB in %d pods",
		restartTook.Round(100*time.Millisecond), &tl, down.Load(), got.Used.Of("nvidia").MemMiB, got.Pods)
	if got.Pods > limit/1024 || len(tl.Other) > 0 {
		t.Fatalf("%d pods of 1 GiB under a %d MiB limit; other failures %q", got.Pods, limit, tl.Other)
	}
}

// apiServerDown reports a create that failed because the API server was
// down or going down: the connection was refused, reset or closed under
// the client (an HTTP/2 connection the restart tore down, or its GOAWAY).
func apiServerDown(err error) bool {
	if err == nil {
		return false
	}
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "EOF",
		"client connection force closed", "server sent GOAWAY"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}
