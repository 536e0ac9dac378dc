package burn

import (
	"slices"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// ClaimTimeline is what a claim burns: its charge over the union of the
// burning intervals of the pods that use it (users' timelines; one that
// never started adds nothing). Between two users' intervals the claim
// burns nothing (a segment with a nil charge); it ends when the last user
// ends, and is open while any user still burns.
func ClaimTimeline(charge effective.Usage, users []Timeline) Timeline {
	type span struct{ from, to time.Time } // to zero: open
	spans := make([]span, 0, len(users))
	for _, u := range users {
		if len(u.Segments) == 0 || (!u.End.IsZero() && !u.End.After(u.Segments[0].From)) {
			continue
		}
		spans = append(spans, span{from: u.Segments[0].From, to: u.End})
	}
	if len(spans) == 0 || charge.IsZero() {
		return Timeline{}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	var tl Timeline
	cur := spans[0]
	flush := func(s span) {
		tl.Segments = append(tl.Segments, Segment{From: s.from, Charge: charge.Clone()})
		tl.End = s.to
	}
	for _, s := range spans[1:] {
		if cur.to.IsZero() {
			break
		}
		if !s.from.After(cur.to) {
			if s.to.IsZero() || s.to.After(cur.to) {
				cur.to = s.to
			}
			continue
		}
		flush(cur)
		tl.Segments = append(tl.Segments, Segment{From: cur.to})
		cur = s
	}
	flush(cur)
	return tl
}
