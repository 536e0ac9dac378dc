package burn

import (
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Amount is a burn in unit-milliseconds: device-milliseconds for a count
// resource, MiB-milliseconds for memory, core-percent-milliseconds for
// cores. Sums saturate at math.MaxInt64.
type Amount int64

// MillisPerHour converts resource-hours to an Amount per unit.
const MillisPerHour = 3_600_000

// Segment is a stretch of a timeline during which the charge is constant:
// from From (inclusive) to the next segment's From, or to the timeline's
// End.
type Segment struct {
	From   time.Time
	Charge effective.Usage
}

// Timeline is what a pod or claim burns: its segments in time order (the
// first From is when it started burning) and End, when it stopped (zero:
// it still burns). A timeline with no segment burns nothing (a Pending pod).
type Timeline struct {
	Segments []Segment
	End      time.Time
}
