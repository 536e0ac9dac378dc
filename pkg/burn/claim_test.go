package burn_test

import (
	"math/rand/v2"
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

// TestClaimTimelineProperty: at any moment a claim burns its charge
// exactly when one of its users burns, and nothing otherwise.
func TestClaimTimelineProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 4))
	charge := effective.Usage{"nvidia": {GPU: 3}}
	for i := range 1000 {
		var users []burn.Timeline
		for range r.IntN(5) {
			a := time.Duration(r.Int64N(int64(10 * time.Hour)))
			b := time.Duration(-1)
			if r.IntN(4) != 0 {
				b = a + time.Duration(r.Int64N(int64(3*time.Hour)))
			}
			users = append(users, span(a, b))
		}
		tl := burn.ClaimTimeline(charge, users)
		for range 50 {
			m := at(time.Duration(r.Int64N(int64(14 * time.Hour))))
			anyUser := false
			for _, u := range users {
				anyUser = anyUser || u.Burning(m)
			}
			if got := tl.ChargeAt(m); got.Equal(charge) != anyUser || (!anyUser && !got.IsZero()) {
				t.Fatalf("case %d at %s: the claim burns %v, a user burns: %v (users %+v, claim %+v)", i, m.Sub(t0), got, anyUser, users, tl)
			}
		}
	}
}
