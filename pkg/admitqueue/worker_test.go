package admitqueue

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// TestWorkersEndAndRestartBetweenReviews: with namespace workers that end
// almost as soon as their queue is empty, reviews arriving while a worker
// ends are never lost nor left waiting: every review is answered, exactly
// what fits the limit is admitted and held, and no worker is left once the
// reviews stop.
func TestWorkersEndAndRestartBetweenReviews(t *testing.T) {
	c := fakeClient(t)
	// The wall clock: what is attacked is the race between a worker's end
	// (its idle timer firing) and a review's arrival, which needs both to
	// run concurrently, not a time stepped between them.
	s, l, _, _ := newStoreWith(t, c, "a", Options{ConfirmAfter: time.Second, RecheckMax: 4 * time.Second, ReadsPerSecond: 10,
		WorkerIdle: 50 * time.Microsecond, Clock: clock.RealClock{}})
	const fits = 30
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 150 {
		wg.Go(func() {
			// Arrive around workers' ends (the one sleep of this package's
			// tests: a random real delay is what spreads the arrivals over
			// the ends of the workers' idle timers).
			time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
			ok := false
			err := admitPod(t.Context(), s, "ns", types.UID(fmt.Sprintf("u%03d", i)), fmt.Sprintf("p%03d", i), func(req decision.Request) (verdict, error) {
				snap := l.Namespace("ns", req.Reservations)
				ok = snap.Used.Of("nvidia").MemMiB+snap.Reserved.Of("nvidia").MemMiB+1024 <= fits*1024
				return verdict{Reserve: ok, Demand: vec(1, 1024)}, nil
			})
			switch {
			case err != nil:
				t.Error(err)
			case ok:
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if held := usage(t, c, "ns").Status.Reservations; admitted.Load() != fits || len(held) != fits {
		t.Fatalf("%d admitted, %d reservations held; want %d of each", admitted.Load(), len(held), fits)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.queues.mu.Lock()
		left := len(s.queues.m)
		s.queues.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d namespace workers still running after the reviews stopped", left)
		}
		runtime.Gosched()
	}
}

// TestIdleTimerResetDropsAnUnreadFiring: a worker that woke for work while
// its idle timer fired leaves the firing unread; the reset drops it, so
// that the timer's next firing does not block the fake clock's Step (with
// it held, every other worker's timer reset waited on the clock: a
// race-detector run of TestForgedGangHoldEnds hung for ten minutes).
func TestIdleTimerResetDropsAnUnreadFiring(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	idle := clk.NewTimer(time.Second)
	clk.Step(time.Second) // fires; nobody reads it
	resetTimer(idle, time.Second)
	stepped := make(chan struct{})
	go func() {
		clk.Step(time.Second) // fires again
		close(stepped)
	}()
	select {
	case <-stepped:
	case <-time.After(30 * time.Second):
		t.Fatal("the clock's Step blocked on the timer's unread firing")
	}
	select {
	case <-idle.C():
	default:
		t.Fatal("the reset timer did not fire")
	}
}
