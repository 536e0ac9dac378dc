package security_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// startOpen runs the webhook without client authentication: what a
// cluster without mutual TLS exposes to every client reaching the port.
func startOpen(t *testing.T) *local.Cluster {
	t.Helper()
	return local.ForTest(t, manifests, local.DefaultWebhook)
}

// maxBytesPerReservation bounds a reservation's share of a
// GPUReservationSet: the documented bound of an object under a flood is
// admission.reservations.maxPerNamespace (500) × this, 256 KiB, far under
// etcd's 1.5 MiB.
const maxBytesPerReservation = 512

// TestForgedReviewFloodIsBounded: 300 forged reviews of made-up 1 MiB pods
// at once into a namespace with room for all, with maxPerNamespace 100 and
// confirmAfter 10 s (so that the flood reaches the bound however slow the
// machine). The object holds at most 100 reservations (the rest are
// refused, naming the setting), at most maxBytesPerReservation each; every
// forged reservation ends as absent once due (one list of the namespace's
// pods confirms them all), after which the namespace's own pods are
// admitted again.
func TestForgedReviewFloodIsBounded(t *testing.T) {
	const bound, reviews = 100, 300
	c := local.ForTest(t, manifests, func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.Config.Admission.Reservations.ConfirmAfter = &metav1.Duration{Duration: 10 * time.Second}
		o.Config.Admission.Reservations.MaxPerNamespace = ptr.To[int32](bound)
		return &o
	})
	ctx := t.Context()
	seed(t, c, "bulk", 1<<29)
	var held, biggest atomic.Int64 // the most reservations and bytes the object held
	sampling, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for sampling.Err() == nil {
			if u, size, err := readUsage(ctx, c, "bulk"); err == nil && u != nil {
				held.Store(max(held.Load(), int64(len(u.Status.Reservations))))
				biggest.Store(max(biggest.Load(), int64(size)))
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	var allowed, capped, other atomic.Int64
	var mu sync.Mutex
	var otherWhy []string
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			cl := attacker(nil, "127.0.0.2")
			for i := next.Add(1); i <= reviews; i = next.Add(1) {
				uid := fmt.Sprintf("forged-%04d", i)
				_, body, err := post(ctx, cl, c, forgedReview("bulk", "made-up-"+uid, uid, 1), nil)
				ok, msg := reviewAllowed(body)
				switch {
				case err == nil && ok:
					allowed.Add(1)
				case err == nil && strings.Contains(msg, "maxPerNamespace"):
					capped.Add(1)
				default:
					other.Add(1)
					mu.Lock()
					otherWhy = append(otherWhy, fmt.Sprint(err, msg))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	stopSampling()
	sampler.Wait()
	t.Logf("%d forged reviews: %d reserved, %d refused at the bound, %d otherwise; the object held at most %d reservations, %d bytes",
		reviews, allowed.Load(), capped.Load(), other.Load(), held.Load(), biggest.Load())
	if held.Load() > bound || allowed.Load() != bound || capped.Load() != reviews-bound {
		t.Fatalf("at most %d reservations held, %d reserved, %d refused at the bound; want exactly the bound (%d) reserved and the rest refused", held.Load(), allowed.Load(), capped.Load(), bound)
	}
	if other.Load() > 0 {
		t.Errorf("%d forged reviews failed otherwise: %q", other.Load(), otherWhy[:min(len(otherWhy), 3)])
	}
	if limit := int64(bound * maxBytesPerReservation); biggest.Load() > limit {
		t.Errorf("the GPUReservationSet reached %d bytes, over %d (%d bytes a reservation)", biggest.Load(), limit, maxBytesPerReservation)
	}
	start := time.Now()
	for {
		u, _ := usage(ctx, t, c, "bulk")
		if len(u.Status.Reservations) == 0 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%d forged reservations still held 30s after the flood", len(u.Status.Reservations))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("every forged reservation ended %s after the flood", time.Since(start).Round(100*time.Millisecond))
	if err := createPod(ctx, c, creates.GPUPod("bulk", "genuine", "", 1024)); err != nil {
		t.Fatalf("a genuine pod after the flood: %v", err)
	}
}

// TestForgedWholeQuotaReviewsDoNotStarve: the attack measured before
// mutual TLS existed (a forged review for the namespace's whole quota, for
// a pod that never exists, twice a second, made every genuine create in
// the namespace fail) against the webhook without client authentication.
// A genuine pod denied only because of such reservations waits for them to
// be confirmed absent, first in the namespace's queue, and is admitted:
// every genuine create succeeds on its first try, within a few seconds,
// and the live pods never exceed the limit.
func TestForgedWholeQuotaReviewsDoNotStarve(t *testing.T) {
	const limit, genuine = 10240, 5
	c := startOpen(t)
	ctx := t.Context()
	seed(t, c, "flood", limit)
	floodCtx, stop := context.WithCancel(ctx)
	var forged, forgedAllowed atomic.Int64
	var attack sync.WaitGroup
	attack.Go(func() {
		cl := attacker(nil, "127.0.0.2")
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-floodCtx.Done():
				return
			case <-tick.C:
			}
			attack.Go(func() {
				uid := fmt.Sprintf("whole-%03d", i)
				forged.Add(1)
				if _, body, err := post(ctx, cl, c, forgedReview("flood", "made-up-"+uid, uid, limit), nil); err == nil {
					if ok, _ := reviewAllowed(body); ok {
						forgedAllowed.Add(1)
					}
				}
			})
		}
	})
	time.Sleep(time.Second) // the namespace's quota is held by forged reservations from now on
	var took []time.Duration
	var failures []string
	for i := range genuine {
		start := time.Now()
		err := createPod(ctx, c, creates.GPUPod("flood", fmt.Sprintf("genuine-%d", i), "", 1024))
		took = append(took, time.Since(start))
		if err != nil {
			failures = append(failures, err.Error())
		}
		time.Sleep(time.Second)
	}
	stop()
	attack.Wait()
	slices.Sort(took)
	t.Logf("%d genuine creates under %d forged whole-quota reviews (%d of them reserved): %d failed; slowest %s, median %s",
		genuine, forged.Load(), forgedAllowed.Load(), len(failures), took[len(took)-1].Round(10*time.Millisecond), took[len(took)/2].Round(10*time.Millisecond))
	if len(failures) > 0 {
		t.Fatalf("genuine creates failed: %q", failures)
	}
	if slowest := took[len(took)-1]; slowest > 8*time.Second {
		t.Errorf("the slowest genuine create took %s, want < 8s (the review's own timeout)", slowest)
	}
	live, err := c.Recount(ctx, "flood")
	if err != nil {
		t.Fatal(err)
	}
	if live.Used.Of("nvidia").MemMiB > limit || live.Pods != genuine {
		t.Fatalf("live: %d pods, %d MiB; want the %d genuine pods within %d MiB", live.Pods, live.Used.Of("nvidia").MemMiB, genuine, limit)
	}
}
