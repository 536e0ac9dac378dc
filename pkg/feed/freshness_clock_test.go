package feed

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestFreshnessProbesOnItsClock: the probes are timed by the injected
// clock: none before ProbeEvery passed on it, none while the watches have
// not synced, one round per tick once they have; the loop ends with ctx.
func TestFreshnessProbesOnItsClock(t *testing.T) {
	const every = 15 * time.Second
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	f := newFreshness(nil, FreshnessOptions{ProbeEvery: every, Clock: clk}, logr.Discard(), map[string]func() string{"pods": func() string { return "5" }})
	probes := make(chan string, 8)
	f.probe = func(_ context.Context, resource string) (string, error) {
		probes <- resource
		return "5", nil
	}
	ticks := make(chan bool, 8)
	var synced atomic.Bool
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(ctx, func() bool { s := synced.Load(); ticks <- s; return s })
	}()
	ticking := func() {
		t.Helper()
		for !clk.HasWaiters() { // the loop waits on its ticker
			select {
			case <-done:
				t.Fatal("the loop ended")
			default:
				runtime.Gosched()
			}
		}
	}
	tick := func(want bool) {
		t.Helper()
		ticking()
		clk.Step(every)
		if got := <-ticks; got != want {
			t.Fatalf("a tick saw synced %v, want %v", got, want)
		}
	}
	ticking()
	clk.Step(every - time.Second)
	select {
	case r := <-probes:
		t.Fatalf("probed %s before ProbeEvery passed", r)
	case s := <-ticks:
		t.Fatalf("ticked (synced %v) before ProbeEvery passed", s)
	default:
	}
	clk.Step(time.Second) // the first tick: not synced, no probe
	if <-ticks {
		t.Fatal("synced too early")
	}
	synced.Store(true)
	tick(true)
	if r := <-probes; r != "pods" {
		t.Fatalf("probed %q, want pods", r)
	}
	select {
	case r := <-probes:
		t.Fatalf("a second probe of %s in one tick", r)
	default:
	}
	cancel()
	<-done
}
