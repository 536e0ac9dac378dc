package membership

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

type progressWatch struct{ rv atomic.Value }

func (w *progressWatch) PodsResourceVersion() string { v, _ := w.rv.Load().(string); return v }

// TestHurriedProgress: a replica renews every renewEvery; while hurried it
// also renews within progressEvery of a change of its progress, never
// more often, never for an unchanged one, and not once the hurry ended.
func TestHurriedProgress(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	w := &progressWatch{}
	w.rv.Store("10")
	p := New(nil, Options{Namespace: "gpuadmit-system", Replica: "a", Watch: w, Clock: clk, Log: logr.Discard()})
	step := func(d time.Duration) { clk.SetTime(clk.Now().Add(d)) }
	published := func() { p.mu.Lock(); p.publishedProgress = w.PodsResourceVersion(); p.mu.Unlock() }
	if !p.renewDue() {
		t.Fatal("the first renewal is not due")
	}
	published()
	w.rv.Store("11")
	step(progressEvery)
	if p.renewDue() {
		t.Fatal("renewed a changed progress early without a hurry")
	}
	p.Hurry()
	if !p.renewDue() {
		t.Fatal("hurried renewal of a changed progress not due")
	}
	published()
	w.rv.Store("12")
	step(progressEvery / 2)
	if p.renewDue() {
		t.Fatal("hurried renewal sooner than progressEvery after the last")
	}
	step(progressEvery / 2)
	if !p.renewDue() {
		t.Fatal("hurried renewal of a changed progress not due after progressEvery")
	}
	published()
	step(progressEvery)
	if p.renewDue() {
		t.Fatal("hurried renewal of an unchanged progress")
	}
	step(hurryFor) // the hurry ended: the regular renewal is due, then nothing early
	if !p.renewDue() {
		t.Fatal("the regular renewal is not due")
	}
	published()
	w.rv.Store("13")
	step(progressEvery)
	if p.renewDue() {
		t.Fatal("renewed a changed progress early after the hurry ended")
	}
}
