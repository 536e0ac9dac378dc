package burn

import (
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Start is when the timeline starts burning (zero for one that never did).
func (tl Timeline) Start() time.Time {
	if len(tl.Segments) == 0 {
		return time.Time{}
	}
	return tl.Segments[0].From
}

// Burning reports whether the timeline burns at t: t is at or after its
// start and before its end (an open timeline burns from its start on).
func (tl Timeline) Burning(t time.Time) bool {
	if len(tl.Segments) == 0 || t.Before(tl.Segments[0].From) {
		return false
	}
	return tl.End.IsZero() || t.Before(tl.End)
}

// ChargeAt is the charge the timeline burns at t (nil when it does not
// burn then).
func (tl Timeline) ChargeAt(t time.Time) effective.Usage {
	if !tl.Burning(t) {
		return nil
	}
	var c effective.Usage
	for _, s := range tl.Segments {
		if s.From.After(t) {
			break
		}
		c = s.Charge
	}
	return c
}

// Between is what the timeline burns in [from, to): each segment's charge
// times the milliseconds of it inside the interval. Intervals are measured
// on the Unix millisecond grid, so Between(a, b) + Between(b, c) equals
// Between(a, c) exactly (short of saturation). Empty when to is not after
// from.
func (tl Timeline) Between(from, to time.Time) Amounts {
	if !to.After(from) || len(tl.Segments) == 0 {
		return nil
	}
	if !tl.End.IsZero() && tl.End.Before(to) {
		to = tl.End
	}
	var out Amounts
	for i, s := range tl.Segments {
		segEnd := to
		if i+1 < len(tl.Segments) && tl.Segments[i+1].From.Before(to) {
			segEnd = tl.Segments[i+1].From
		}
		segStart := s.From
		if segStart.Before(from) {
			segStart = from
		}
		if !segEnd.After(segStart) {
			continue
		}
		out = usageAmounts(out, s.Charge, millisBetween(segStart, segEnd))
	}
	return out
}
