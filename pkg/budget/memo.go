package budget

import (
	"sync/atomic"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// memo is a calendar budget's accrual at a moment with what it burns per
// millisecond from then on, valid until the first moment any counted
// pod's charge changes (next) or a pod event of its namespaces (version):
// admission's standings are O(1) per budget between events instead of a
// sum over the pods.
type memo struct {
	version uint64
	at      time.Time
	next    time.Time
	acc     accrual
	// rate is the charge burning at `at` (per millisecond); hourAgo the
	// charge that burned an hour before (what leaves the last hour).
	rate, hourAgo burn.Amounts
}

// memoCell holds a budget's memo (read under the tracker's read lock).
type memoCell struct{ p atomic.Pointer[memo] }

// advance is the accrual at now (at <= now < next).
func (m *memo) advance(now time.Time) accrual {
	ms := now.UnixMilli() - m.at.UnixMilli()
	a := accrual{start: m.acc.start, end: m.acc.end, folded: m.acc.folded,
		live: burn.Amounts{}.Add(m.acc.live).Add(scaled(m.rate, ms)), lastHour: burn.Amounts{}}
	for k, v := range m.acc.lastHour {
		a.lastHour[k] = v
	}
	a.lastHour = a.lastHour.Add(scaled(m.rate, ms))
	for k, v := range scaled(m.hourAgo, ms) {
		a.lastHour[k] = max(a.lastHour[k]-v, 0)
	}
	return a
}

// scaled is rate × ms, saturating.
func scaled(rate burn.Amounts, ms int64) burn.Amounts {
	var out burn.Amounts
	for k, v := range rate {
		if v <= 0 || ms <= 0 {
			continue
		}
		x := burn.Amount(1<<63 - 1)
		if int64(v) <= (1<<63-1)/ms {
			x = v * burn.Amount(ms)
		}
		out = out.Add(burn.Amounts{k: x})
	}
	return out
}

// versionLocked is what invalidates b's memo: its namespace's pod events
// (a GPUBudget), any event (a GPUClusterBudget).
func (t *Tracker) versionLocked(b *tracked) uint64 {
	if b.cluster {
		return t.version
	}
	return t.nsVersion[b.ref.Namespace]
}

// bumpLocked records a change of namespace ns's pods or claims.
func (t *Tracker) bumpLocked(ns string) {
	t.version++
	t.nsVersion[ns]++
}

// accrueFastLocked is accrueLocked of b's own checkpoint, from its memo
// when valid (a calendar window), else computed and memoized.
func (t *Tracker) accrueFastLocked(b *tracked, now time.Time) accrual {
	if b.window.Rolling() != 0 {
		return t.accrueLocked(b, &b.cp, now)
	}
	v := t.versionLocked(b)
	if m := b.memo.p.Load(); m != nil && m.version == v && !now.Before(m.at) && now.Before(m.next) {
		return m.advance(now)
	}
	a := t.accrueLocked(b, &b.cp, now)
	b.memo.p.Store(t.memoOf(b, a, now, v))
	return a
}

// memoOf is the memo of accrual a of b at now.
func (t *Tracker) memoOf(b *tracked, a accrual, now time.Time, v uint64) *memo {
	m := &memo{version: v, at: now, next: a.end, acc: a}
	hourAgo := now.Add(-time.Hour)
	boundary := func(ts time.Time) {
		for _, x := range []time.Time{ts, ts.Add(time.Hour)} {
			if x.After(now) && x.Before(m.next) {
				m.next = x
			}
		}
	}
	count := func(e *podEntry, to time.Time) {
		from := a.start
		if until, ok := b.cp.foldedPods[e.uid]; ok && until.After(from) {
			from = until
		}
		boundary(from)
		boundary(to)
		for _, s := range e.timeline.Segments {
			boundary(s.From)
		}
		if !e.timeline.End.IsZero() {
			boundary(e.timeline.End)
		}
		if !from.After(now) && to.After(now) {
			m.rate = m.rate.Add(perMilli(e.timeline, now))
		}
		if !from.After(hourAgo) && to.After(hourAgo) {
			m.hourAgo = m.hourAgo.Add(perMilli(e.timeline, hourAgo))
		}
	}
	far := a.end.Add(time.Hour)
	t.eachCountedLocked(b, func(e *podEntry) { count(e, far) })
	for uid, at := range b.departed {
		if e := t.pods[uid]; e != nil && !t.selectsLocked(b, e.namespace) {
			count(e, at)
		}
	}
	return m
}

// perMilli is what tl burns in one millisecond at ts.
func perMilli(tl burn.Timeline, ts time.Time) burn.Amounts {
	return burn.Timeline{Segments: []burn.Segment{{From: ts, Charge: tl.ChargeAt(ts)}}}.Between(ts, ts.Add(time.Millisecond))
}
