package admitqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// TestForgedFloodDeniesNoGenuineCreate: another validating webhook on pod
// creates has a 10 s timeout (Kyverno's), so confirmAfter is 12 s. From
// the start, a client that reached the webhook port sends a forged review
// for the whole 16 GiB quota of an empty namespace every second (30 of
// them, none of which ever becomes a pod), and, from 2.5 s on, when the
// second forged review already waits for the first, 12 genuine 1 GiB
// creates arrive, one a second, half a second after a forged one.
// With a review budget that covers confirmAfter (15 s: what the check
// asks for), every genuine create is admitted (the first waits for the
// forged reservation ahead of it; the forged reviews that wait with it
// hold no room it needs and go after it, smallest first) and the namespace
// never holds more than its quota. With the default budget (8 s) the check
// says it cannot cover confirmAfter, and the flood denies genuine creates:
// what the check warns of. The clock is fake; each step of 100 ms is taken
// once the store is idle or waits on that clock.
func TestForgedFloodDeniesNoGenuineCreate(t *testing.T) {
	tests := []struct {
		name          string
		reviewTimeout time.Duration
		covers        bool
	}{
		{name: "a review budget that covers confirmAfter", reviewTimeout: 15 * time.Second, covers: true},
		{name: "the default review budget", reviewTimeout: 8 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			denied, maxHeld := flood(t, tt.reviewTimeout, tt.covers)
			t.Logf("%d of 12 genuine creates denied; the namespace held at most %d MiB", denied, maxHeld)
			if maxHeld > floodQuota {
				t.Errorf("the namespace held %d MiB, over its quota of %d MiB", maxHeld, floodQuota)
			}
			if tt.covers && denied != 0 {
				t.Errorf("%d genuine creates denied, want 0", denied)
			}
			if !tt.covers && denied == 0 {
				t.Errorf("no genuine create denied with a budget shorter than confirmAfter: the check warns of nothing")
			}
		})
	}
}

const floodQuota, floodGenuine = 16384, 1024

// flood runs the scenario and returns how many genuine creates were denied
// and the most the namespace held (reservations and recorded pods).
func flood(t *testing.T, reviewTimeout time.Duration, covers bool) (denied int, maxHeld int64) {
	kyverno := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kyverno"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.kyverno.svc", TimeoutSeconds: ptr.To[int32](10),
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}}}
	c := fakeClient(t, kyverno)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s, l, _, _ := newStoreWith(t, c, "a", Options{ReviewTimeout: reviewTimeout, RecheckMax: time.Minute, ReadsPerSecond: 10,
		OwnWebhookConfiguration: "gpuadmit", Clock: clk})
	if w, _ := s.confirmer.RefreshWindow(t.Context()); w != 12*time.Second {
		t.Fatalf("confirmAfter %s, want 12s", w)
	}
	if got := s.checkWait(12 * time.Second); got != covers {
		t.Fatalf("the check says the budget covers confirmAfter: %v, want %v", got, covers)
	}
	var outstanding atomic.Int64
	var mu sync.Mutex
	admit := func(uid, name string, need int64, genuine bool) {
		outstanding.Add(1)
		go func() {
			defer outstanding.Add(-1)
			ctx, cancel := context.WithTimeout(context.Background(), reviewTimeout)
			defer cancel()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
			res, err := s.Admit(context.WithValue(ctx, decideKey{}, quotaDecider(l, floodQuota, need)), pod.UID, decision.Request{Pod: pod, Namespace: "ns"})
			if !genuine {
				return
			}
			if err != nil || !res.Allowed {
				mu.Lock()
				denied++
				mu.Unlock()
				return
			}
			// The API server stores the pod; the watch records it.
			if err := c.Create(context.Background(), pod.DeepCopy()); err != nil {
				t.Error(err)
			}
			l.UpsertPod(testpod.New(name).NS("ns").UID(uid).App("c", testpod.GPU(1), testpod.Mem(need)).Build())
		}()
	}
	const step = 100 * time.Millisecond
	for i := 0; i < 400; i++ { // 40 s
		switch at := time.Duration(i) * step; {
		case at%time.Second == 0 && at < 30*time.Second:
			admit(fmt.Sprint("forged-", i), fmt.Sprint("forged-", i), floodQuota, false)
		case at%time.Second == time.Second/2 && at > 2*time.Second && at < 15*time.Second:
			admit(fmt.Sprint("genuine-", i), fmt.Sprint("genuine-", i), floodGenuine, true)
		}
		idle(clk, &outstanding)
		maxHeld = max(maxHeld, held(t, c, l))
		clk.Step(step)
	}
	for outstanding.Load() > 0 {
		clk.Step(step)
		idle(clk, &outstanding)
	}
	return denied, maxHeld
}

// quotaDecider decides like the built-in limit, for a pod needing need MiB.
func quotaDecider(l *ledger.Ledger, limit, need int64) decideFn {
	return func(req decision.Request) (verdict, error) {
		snap := l.Namespace("ns", req.Reservations)
		used, reserved, unconfirmed := snap.Used.Of("nvidia"), snap.Reserved.Of("nvidia"), snap.Unconfirmed.Of("nvidia")
		ok := used.MemMiB+reserved.MemMiB+need <= limit
		return verdict{Reserve: ok, Demand: vec(1, need), Wait: !ok && used.MemMiB+reserved.MemMiB-unconfirmed.MemMiB+need <= limit}, nil
	}
}

// idle returns once every admission was answered, or the namespace's
// worker waits on the fake clock (seen three times in a row; what queued
// meanwhile is taken when it wakes).
func idle(clk *clocktesting.FakeClock, outstanding *atomic.Int64) {
	for calm := 0; calm < 3; {
		// A real pause between looks: the fake clock says only that some
		// goroutine waits on it, not that the others are done; three calm
		// looks a millisecond apart are what "settled" means here.
		time.Sleep(time.Millisecond)
		if outstanding.Load() == 0 || clk.HasWaiters() {
			calm++
		} else {
			calm = 0
		}
	}
}

// held is what the namespace holds: its reservations and its recorded
// pods, each counted once.
func held(t *testing.T, c client.Client, l *ledger.Ledger) int64 {
	t.Helper()
	u := &gpuadmitv1.GPUReservationSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: gpuadmitv1.ObjectName}, u); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	snap := l.Namespace("ns", reservation.Countable(u.Status, ""))
	return snap.Used.Of("nvidia").MemMiB + snap.Reserved.Of("nvidia").MemMiB
}
