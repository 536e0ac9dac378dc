package ha_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// TestFrozenReplicaAfterObjectDeleted: replica-1's pod watch lags 15 s and
// the replica is frozen (SIGSTOP, as a long GC pause or a stalled VM) past
// the others' patience; meanwhile the others admit 6 × 1 GiB into a 10 GiB
// quota, stop waiting for it, drain the namespace's GPUReservationSet, and an
// administrator deletes the drained object (which held
// removedResourceVersion, the guard a lagging replica reads). The frozen
// replica resumes and is sent reviews. Measured before: it admitted 8 more,
// 14 pods (14336 MiB) live in the 10240 MiB quota, 4 runs of 4. Now it
// notices the pause, proves that its pod watch caught up with a fresh read
// before deciding again (refusing meanwhile), and the live pods never
// exceed the quota.
func TestFrozenReplicaAfterObjectDeleted(t *testing.T) {
	const ns, limit = "frozen", 10 * 1024
	c := startHA(t, nil)
	k := fastClient(t, c)
	seed(t, c, ns, limit)
	if err := c.Terminate(1); err != nil {
		t.Fatal(err)
	}
	if err := c.StartReplica(1, testhooks.WatchDelay(15*time.Second), "--advertise-address="); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	create := func(name string, tl *creates.Tally) {
		_, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, name, "", 1024), metav1.CreateOptions{})
		tl.Record(err)
	}
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = c.Continue(1)
		}
	}()
	frozen := time.Now()
	c.Proxy.Pin(0)
	c.Proxy.Reset()
	time.Sleep(200 * time.Millisecond)
	var viaOthers, viaFrozen creates.Tally
	for i := range 6 {
		create(fmt.Sprintf("a-%d", i), &viaOthers)
	}
	// The others stop waiting for the frozen replica (its Lease unchanged
	// for 10 s) and remove the reservations of the pods they recorded.
	if _, err := c.WaitDrained(t.Context(), ns, 40*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := c.Kubectl(t.Context(), nil, "delete", "gpureservationsets.gpuadmit.io", "usage", "-n", ns); err != nil {
		t.Fatalf("deleting the drained GPUReservationSet: %v: %s", err, stderr)
	}
	if err := c.Continue(1); err != nil {
		t.Fatal(err)
	}
	resumed = true
	pausedFor := time.Since(frozen)
	c.Proxy.Pin(1)
	c.Proxy.Reset()
	time.Sleep(200 * time.Millisecond)
	// Until its pod watch (15 s behind) caught up with the API server, it
	// refuses; then it decides: the 4 GiB left, and no more.
	deadline := time.Now().Add(45 * time.Second)
	for i := 0; time.Now().Before(deadline) && (viaFrozen.Admitted.Load() < 4 || viaFrozen.Denied.Load() == 0); i++ {
		create(fmt.Sprintf("b-%d", i), &viaFrozen)
		if _, mem := livePods(t, c, ns); mem > limit {
			t.Fatalf("%d MiB live in a %d MiB quota after %s", mem, limit, &viaFrozen)
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.Proxy.Pin(-1)
	pods, mem := livePods(t, c, ns)
	t.Logf("through the others: %s; frozen %s, then through it: %s (first refusals: %q); %d pods use %d MiB",
		&viaOthers, pausedFor.Round(100*time.Millisecond), &viaFrozen, viaFrozen.Why, pods, mem)
	if mem > limit || viaOthers.Admitted.Load() != 6 || viaFrozen.Admitted.Load() != 4 || viaFrozen.Denied.Load() == 0 || len(viaFrozen.Other) > 0 {
		t.Fatalf("want 6, then through the frozen replica exactly 4 admitted and the rest denied; %d MiB live in a %d MiB quota; other failures %q %q",
			mem, limit, viaOthers.Other, viaFrozen.Other)
	}
}

// TestSummaryLeaseLost: the Lease through which one replica writes the
// GPUUsage summaries is taken by another holder (as when the elected
// replica cannot renew it in time). Measured before: losing it ended the
// replica's process ("leader election lost") and its in-flight reviews
// failed. Now every replica keeps running and admitting, and once the
// intruder's Lease expires a replica is elected again and writes the
// summaries.
func TestSummaryLeaseLost(t *testing.T) {
	const ns = "lease-lost"
	c := startHA(t, nil)
	k := fastClient(t, c)
	seed(t, c, ns, 1<<20)
	ctx := t.Context()
	leases := c.Kube.CoordinationV1().Leases(local.Namespace)
	var lease *coordinationv1.Lease
	waitFor(t, "a summary writer is elected", func() bool {
		l, err := leases.Get(ctx, "gpuadmit-usage-status", metav1.GetOptions{})
		lease = l
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	})
	holder := *lease.Spec.HolderIdentity
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, "gpuadmit-usage-status", metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To("intruder"), ptr.To[int32](15)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the holder's next renewals find another holder
	var tl creates.Tally
	for i := range c.Replicas {
		c.Proxy.Pin(i)
		c.Proxy.Reset()
		for j := range 3 {
			_, err := k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, fmt.Sprintf("r%d-%d", i, j), "", 1024), metav1.CreateOptions{})
			tl.Record(err)
		}
	}
	c.Proxy.Pin(-1)
	if tl.Admitted.Load() != 9 {
		t.Fatalf("after %s lost the summary Lease: %s (%q %q); want every replica admitting", holder, &tl, tl.Why, tl.Other)
	}
	for i := range c.Replicas {
		if err := c.WaitReady(ctx, i); err != nil {
			t.Fatalf("after %s lost the summary Lease: %v", holder, err)
		}
	}
	var elected string
	waitFor(t, "a replica elected again once the intruder's Lease expired", func() bool {
		l, err := leases.Get(ctx, "gpuadmit-usage-status", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "intruder" {
			return false
		}
		elected = *l.Spec.HolderIdentity
		return true
	})
	if _, err := k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "after", "", 1024), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the summaries written by the replica elected again", func() bool {
		u, err := c.Usage(ctx, ns)
		return err == nil && u != nil && u.Status.Summary.GPU == "10/-"
	})
	t.Logf("%s lost the summary Lease: every replica kept admitting (%s); %s was elected again and writes the summaries", holder, &tl, elected)
}

// waitFor polls cond for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForState(t, what, func() (bool, string) { return cond(), "" })
}

// waitForState waits, polling, until cond holds (a minute at most, a
// ceiling, not an expectation); on timeout it fails with the state cond
// last reported.
func waitForState(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s: %s", what, state)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
