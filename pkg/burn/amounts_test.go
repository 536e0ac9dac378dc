package burn_test

import (
	"math"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestAmountsSaturate: sums of hostile amounts saturate instead of
// wrapping negative, and a negative amount never lowers a sum.
func TestAmountsSaturate(t *testing.T) {
	var a burn.Amounts
	a = a.Add(burn.Amounts{gpuKey: math.MaxInt64 - 1, memKey: -5})
	a = a.Add(burn.Amounts{gpuKey: 10, memKey: 7})
	a = a.Add(burn.Amounts{memKey: -100})
	if a[gpuKey] != math.MaxInt64 || a[memKey] != 7 {
		t.Errorf("sums %v, want gpu saturated and memory 7", a)
	}
	if got := burn.Amount(-3).Plus(-4); got != 0 {
		t.Errorf("(-3).Plus(-4) = %d, want 0", got)
	}
}

// TestBetweenSaturates: a charge times a long interval saturates, never
// wraps negative.
func TestBetweenSaturates(t *testing.T) {
	tl := burn.Timeline{Segments: []burn.Segment{{From: at(0), Charge: effective.Usage{"nvidia": {GPU: math.MaxInt64 / 1000, MemMiB: math.MaxInt64}}}}}
	got := tl.Between(at(0), at(time.Hour))
	if got[gpuKey] != math.MaxInt64 || got[memKey] != math.MaxInt64 {
		t.Errorf("%v, want saturated", got)
	}
}

// TestBurn: a charge held for a duration, saturating; nothing for a
// non-positive duration or a hostile negative charge.
func TestBurn(t *testing.T) {
	u := effective.Usage{"nvidia": {GPU: 2, MemMiB: -10}}
	if got := burn.Burn(u, 2*time.Hour); got[gpuKey] != 4*burn.MillisPerHour || got[memKey] != 0 {
		t.Errorf("Burn = %v", got)
	}
	if got := burn.Burn(u, -time.Hour); len(got) != 0 {
		t.Errorf("negative duration burns %v", got)
	}
	if got := burn.Burn(effective.Usage{"nvidia": {GPU: math.MaxInt64}}, time.Hour); got[gpuKey] != math.MaxInt64 {
		t.Errorf("not saturated: %v", got)
	}
	if tl := burn.PodTimeline(nil, nil, burn.Observed{}); len(tl.Segments) != 0 {
		t.Errorf("a nil pod burns: %+v", tl)
	}
}
