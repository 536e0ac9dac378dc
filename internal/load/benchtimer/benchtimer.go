package benchtimer

import (
	"cmp"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Timer times the iterations of one benchmark. New locks the calling
// goroutine to its thread (the thread CPU clock is per thread); Report
// unlocks it.
//
// Reading the thread CPU clock is a system call (about half a microsecond
// on a virtual machine, where the vDSO does not serve it), which would be
// counted in every iteration of a benchmark of a few microseconds. So
// every iteration's wall time is recorded, but the CPU time only of the
// first fullSamples iterations and of one in cpuEvery after them, each
// later sample weighted by the cpuEvery iterations it stands for: a
// systematic sample whose weighted mean and p99 estimate the whole run's.
type Timer struct {
	wall, cpu    []time.Duration
	start        time.Time
	startCPU     time.Duration
	sampling     bool
	n            int
	lockedThread bool
}

// The CPU sample: every iteration up to fullSamples, then one in cpuEvery.
const (
	fullSamples = 1024
	cpuEvery    = 8
)

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
func (t *Timer) Begin() {
	t.n++
	t.sampling = t.n <= fullSamples || t.n%cpuEvery == 0
	if t.sampling {
		t.startCPU = threadCPU()
	}
	t.start = time.Now()
}

// End ends the iteration Begin started.
func (t *Timer) End() {
	t.wall = append(t.wall, time.Since(t.start))
	if t.sampling {
		t.cpu = append(t.cpu, threadCPU()-t.startCPU)
	}
}

func p99(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)*99/100].Nanoseconds())
}

// weighted is a CPU sample: the first fullSamples stand for one iteration
// each, the later ones for cpuEvery each.
type weighted struct {
	d time.Duration
	w int64
}

// cpuStats are the mean and p99 of the CPU samples, each weighted by the
// iterations it stands for, so that the fully sampled first iterations
// count no more than the later ones.
func (t *Timer) cpuStats() (mean, p99 float64) {
	ws := make([]weighted, len(t.cpu))
	var sum, total int64
	for i, d := range t.cpu {
		ws[i] = weighted{d: d, w: 1}
		if i >= fullSamples {
			ws[i].w = cpuEvery
		}
		sum += d.Nanoseconds() * ws[i].w
		total += ws[i].w
	}
	slices.SortFunc(ws, func(a, b weighted) int { return cmp.Compare(a.d, b.d) })
	seen := int64(0)
	for _, x := range ws {
		if seen += x.w; seen*100 > total*99 {
			return float64(sum) / float64(total), float64(x.d.Nanoseconds())
		}
	}
	return float64(sum) / float64(total), float64(ws[len(ws)-1].d.Nanoseconds())
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
	mean, cpu99 := t.cpuStats()
	b.ReportMetric(p99(t.wall), "p99-ns")
	b.ReportMetric(mean, "cpu-ns/op")
	b.ReportMetric(cpu99, "p99-cpu-ns")
}
