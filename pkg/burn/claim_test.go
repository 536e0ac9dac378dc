package burn_test

import (
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// span is a user timeline burning from a to b (b < 0: still burning).
func span(a, b time.Duration) burn.Timeline {
	tl := burn.Timeline{Segments: []burn.Segment{{From: at(a), Charge: effective.Usage{"nvidia": {GPU: 7}}}}}
	if b >= 0 {
		tl.End = at(b)
	}
	return tl
}

// TestClaimTimelineUnion: a claim burns its charge once over the union of
// its users' burning intervals, whatever they burn themselves, however
// many overlap; nothing between them; nothing without a started user.
func TestClaimTimelineUnion(t *testing.T) {
	h := time.Hour
	charge := effective.Usage{"nvidia": {GPU: 2, MemMiB: 100}}
	cases := []struct {
		name  string
		users []burn.Timeline
		gpu   burn.Amount // over [t0, t0+10h)
	}{
		{name: "no user", gpu: 0},
		{name: "users never started", users: []burn.Timeline{{}, {}}, gpu: 0},
		{name: "one user", users: []burn.Timeline{span(h, 3*h)}, gpu: 2 * hours(2)},
		{name: "overlapping users count once", users: []burn.Timeline{span(h, 3*h), span(2*h, 4*h), span(h, 2*h)}, gpu: 2 * hours(3)},
		{name: "disjoint users, a gap burns nothing", users: []burn.Timeline{span(5*h, 6*h), span(h, 2*h)}, gpu: 2 * hours(2)},
		{name: "touching users", users: []burn.Timeline{span(h, 2*h), span(2*h, 3*h)}, gpu: 2 * hours(2)},
		{name: "an open user keeps it burning", users: []burn.Timeline{span(h, 2*h), span(3*h, -1), span(4*h, 5*h)}, gpu: 2 * hours(8)},
		{name: "an empty interval adds nothing", users: []burn.Timeline{span(h, h)}, gpu: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := burn.ClaimTimeline(charge, tc.users)
			got := tl.Between(t0, at(10*h))
			if got[gpuKey] != tc.gpu {
				t.Errorf("burn %d, want %d (timeline %+v)", got[gpuKey], tc.gpu, tl)
			}
			if tc.gpu != 0 && got[memKey] != tc.gpu/2*100 {
				t.Errorf("memory burn %d, want %d", got[memKey], tc.gpu/2*100)
			}
		})
	}
}
