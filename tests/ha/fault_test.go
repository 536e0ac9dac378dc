package ha_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// TestReplicaKilledMidBurst: a replica is killed (SIGKILL) in the middle of
// 200 concurrent creates against a quota for 20, then restarted: never more
// than 20 admitted, and the only refusals for unavailability are reviews
// that were in flight on the killed replica (at most the 16 clients').
func TestReplicaKilledMidBurst(t *testing.T) {
	c := startHA(t, nil)
	k := fastClient(t, c)
	const ns, clients = "killed", 16
	seed(t, c, ns, 20*1024)
	var kill sync.Once
	var killedAt time.Time
	tl := replicas.Burst(t.Context(), k, ns, 200, clients, func(i int) {
		if i == 60 {
			kill.Do(func() {
				if err := c.Kill(1); err != nil {
					t.Error(err)
				}
				killedAt = time.Now()
			})
		}
	})
	if err := c.StartReplica(1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	pods, mem := livePods(t, c, ns)
	t.Logf("replica-1 killed at %s; %s; %d pods use %d MiB", killedAt.Format(time.StampMilli), tl, pods, mem)
	if tl.Admitted.Load() > 20 || pods > 20 || len(tl.Other) > 0 {
		t.Fatalf("over the quota, or other failures %q", tl.Other)
	}
	if tl.Unavailable.Load() > clients {
		t.Fatalf("%d refused for unavailability: more than the %d reviews that can be in flight; first refusals: %q", tl.Unavailable.Load(), clients, tl.Why)
	}
	waitDrained(t, c, ns)
	ledgersMatch(t, c, ns)
	forwardedToOwner(t, c)
}

// forwardedToOwner sends one GPU pod through each replica in turn: the two
// that do not own the namespace forward the review to the one that does.
func forwardedToOwner(t *testing.T, c *replicas.Cluster) {
	t.Helper()
	const ns = "owned"
	seed(t, c, ns, 1<<20)
	time.Sleep(3 * time.Second) // every replica read the others' addresses
	answered := func() float64 {
		sum := 0.0
		for i := range c.Replicas {
			n, err := c.Metric(i, "gpuadmit_reviews_forwarded_total", `result="answered"`)
			if err != nil {
				t.Fatal(err)
			}
			sum += n
		}
		return sum
	}
	before := answered()
	k := fastClient(t, c)
	for i := range c.Replicas {
		c.Proxy.Pin(i)
		c.Proxy.Reset()
		if _, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, fmt.Sprintf("via-%d", i), "", 1024), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.Proxy.Pin(-1)
	if got := answered() - before; got != 2 {
		t.Fatalf("%v of the 3 reviews were forwarded to the namespace's owner and answered by it, want 2", got)
	}
}

// TestRollingRestartUnderLoad: all three replicas are restarted one after
// the other (SIGTERM: each fails readiness, drains, stops; then a new one
// starts) while a client creates GPU pods steadily: no create is refused for
// unavailability, the quota is never exceeded, and the reservations drain.
func TestRollingRestartUnderLoad(t *testing.T) {
	c := startHA(t, nil)
	k := fastClient(t, c)
	const ns, limit, rate = "rolling", 150 * 1024, 20
	seed(t, c, ns, limit)
	tl, took, err := c.RollingRestart(t.Context(), k, ns, rate)
	if err != nil {
		t.Fatal(err)
	}
	pods, mem := livePods(t, c, ns)
	t.Logf("rolling restart of 3 replicas in %s under %d creates/s: %s; %d pods use %d MiB", took.Round(100*time.Millisecond), rate, tl, pods, mem)
	if tl.Unavailable.Load() != 0 || len(tl.Other) > 0 || mem > limit {
		t.Fatalf("refused for unavailability: %d (%q); other failures %q", tl.Unavailable.Load(), tl.Why, tl.Other)
	}
	waitDrained(t, c, ns)
	ledgersMatch(t, c, ns)
}

// TestLaggingReplica: replica-1's pod watch holds every event back a
// minute while the others admit: the reservations of pods it has not seen
// stay counted by it (their removal waits for its progress), so when it
// decides it never admits past the quota; not even after the namespace's
// GPUReservationSet, which holds those reservations, is deleted by hand. (The quota itself is known to it: a lag
// in the quota's own watch is the staleness every informer-fed admission
// controller has; the freshness check reports it.)
func TestLaggingReplica(t *testing.T) {
	const delay = time.Minute
	c := startHA(t, nil)
	k := fastClient(t, c)
	const ns, limit = "lagging", 10 * 1024
	seed(t, c, ns, limit)
	if err := c.Terminate(1); err != nil {
		t.Fatal(err)
	}
	// It takes no forwarded reviews and forwards none (no address): every
	// review sent to it is decided by it.
	if err := c.StartReplica(1, testhooks.WatchDelay(delay), "--advertise-address="); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	var viaOthers, viaLagging creates.Tally
	create := func(name string, tl *creates.Tally) {
		_, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, name, "", 1024), metav1.CreateOptions{})
		tl.Record(err)
	}
	c.Proxy.Pin(0)
	c.Proxy.Reset()
	time.Sleep(200 * time.Millisecond)
	for i := range 6 {
		create(fmt.Sprintf("a-%d", i), &viaOthers)
	}
	waitFor(t, "replica-0 and replica-2 recorded the 6 pods and marked their reservations recorded", func() bool {
		u, err := c.ReservationSet(t.Context(), ns)
		if err != nil || u == nil || len(u.Status.Reservations) != 6 {
			return false
		}
		for _, r := range u.Status.Reservations {
			if r.RecordedResourceVersion == "" {
				return false
			}
		}
		return true
	})
	if _, stderr, err := c.Kubectl(t.Context(), nil, "delete", "gpureservationsets.gpuadmit.io", "usage", "-n", ns); err != nil {
		t.Fatalf("deleting the GPUReservationSet by hand: %v: %s", err, stderr)
	}
	time.Sleep(time.Second) // every replica saw the delete
	c.Proxy.Pin(1)
	c.Proxy.Reset()
	time.Sleep(200 * time.Millisecond)
	for i := range 8 {
		create(fmt.Sprintf("b-%d", i), &viaLagging)
	}
	c.Proxy.Pin(-1)
	pods, mem := livePods(t, c, ns)
	reserved, err := c.Reserved(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("through an up-to-date replica: %s; then through the replica %s behind: %s; %d pods use %d MiB; %d reservations still held for the lagging replica",
		&viaOthers, delay, &viaLagging, pods, mem, reserved)
	if mem > limit || viaOthers.Admitted.Load() != 6 || viaLagging.Admitted.Load() != 4 || viaLagging.Unavailable.Load() != 0 {
		t.Fatalf("want 6 then exactly 4 admitted (10 of 10 GiB), none refused; %q; other failures %q %q", viaLagging.Why, viaOthers.Other, viaLagging.Other)
	}
}
