package source

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestProgress: a slow live read tells the pods listed so far after its
// delay, then once per interval, and no line after it ends: no timer is
// left that could print one, and time passing prints nothing. The clock
// is stepped; each line is waited for as it is written.
func TestProgress(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	w := fixtures.SyncBuffer{Lines: make(chan string, 64)}
	p := newProgress(&w, clk, 2*time.Second, time.Second)
	p.listed(500)
	clk.Step(2 * time.Second)
	if got := w.NextProgress(t); got != "reading the cluster: 500 pods listed...\n" {
		t.Fatalf("after the delay: %q", got)
	}
	p.listed(700)
	clk.Step(time.Second)
	if got := w.NextProgress(t); got != "reading the cluster: 700 pods listed...\n" {
		t.Fatalf("after an interval: %q", got)
	}
	p.end()
	p.end()
	if clk.HasWaiters() {
		t.Fatal("a progress timer is still armed after end: a line can come after it")
	}
	clk.Step(time.Hour)
	if got := w.String(); got != "reading the cluster: 500 pods listed...\nreading the cluster: 700 pods listed...\n" {
		t.Errorf("lines after end: %q", got)
	}
	var nothing *progress
	nothing.listed(1)
	nothing.end()
}
