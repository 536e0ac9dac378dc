package benchtimer

import (
	"testing"
	"time"
)

// TestCPUStatsWeighLaterSamples: a later sample stands for cpuEvery
// iterations, a first one for one, in the mean and in the p99.
func TestCPUStatsWeighLaterSamples(t *testing.T) {
	samples := func(n int, d time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	tests := []struct {
		name      string
		cpu       []time.Duration
		mean, p99 float64
	}{
		{name: "first samples only", cpu: append(samples(99, 1000), 5000), mean: 1040, p99: 5000},
		{name: "later samples weigh cpuEvery each",
			cpu:  append(samples(fullSamples, 1000), samples(16, 9000)...),
			mean: float64(fullSamples*1000+16*cpuEvery*9000) / float64(fullSamples+16*cpuEvery), p99: 9000},
		{name: "a later outlier is one in cpuEvery iterations", cpu: append(samples(fullSamples, 1000), append(samples(200, 2000), 50000)...),
			mean: float64(fullSamples*1000+200*cpuEvery*2000+cpuEvery*50000) / float64(fullSamples+201*cpuEvery), p99: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := &Timer{cpu: tt.cpu}
			if mean, p99 := tm.cpuStats(); mean != tt.mean || p99 != tt.p99 {
				t.Fatalf("cpuStats() = %v, %v; want %v, %v", mean, p99, tt.mean, tt.p99)
			}
		})
	}
}

// TestSampling: every iteration up to fullSamples is sampled, then one in
// cpuEvery; every iteration's wall time is kept.
func TestSampling(t *testing.T) {
	tm := &Timer{} // not New: no thread to lock for counting
	const n = fullSamples + 10*cpuEvery
	for range n {
		tm.Begin()
		tm.End()
	}
	if len(tm.wall) != n || len(tm.cpu) != fullSamples+10 {
		t.Fatalf("%d wall times and %d CPU samples of %d iterations; want %d and %d", len(tm.wall), len(tm.cpu), n, n, fullSamples+10)
	}
}
