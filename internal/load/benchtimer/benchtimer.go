package benchtimer

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Timer times the iterations of one benchmark. New locks the calling
// goroutine to its thread (the thread CPU clock is per thread); Report
// unlocks it.
type Timer struct {
	wall, cpu    []time.Duration
	start        time.Time
	startCPU     time.Duration
	lockedThread bool
}

// New returns a Timer for the calling goroutine.
func New() *Timer {
	runtime.LockOSThread()
	return &Timer{wall: make([]time.Duration, 0, 1<<12), cpu: make([]time.Duration, 0, 1<<12), lockedThread: true}
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Begin starts an iteration.
func (t *Timer) Begin() { t.start, t.startCPU = time.Now(), threadCPU() }

// End ends the iteration Begin started.
func (t *Timer) End() {
	t.cpu = append(t.cpu, threadCPU()-t.startCPU)
	t.wall = append(t.wall, time.Since(t.start))
}

func p99(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)*99/100].Nanoseconds())
}

// Report adds p99-ns (wall), cpu-ns/op and p99-cpu-ns (thread CPU time) to
// b, and unlocks the thread.
func (t *Timer) Report(b *testing.B) {
	if t.lockedThread {
		defer runtime.UnlockOSThread()
		t.lockedThread = false
	}
	if len(t.wall) == 0 {
		return
	}
	var sum time.Duration
	for _, c := range t.cpu {
		sum += c
	}
	b.ReportMetric(p99(t.wall), "p99-ns")
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(t.cpu)), "cpu-ns/op")
	b.ReportMetric(p99(t.cpu), "p99-cpu-ns")
}
