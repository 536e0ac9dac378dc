package budget

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// accrual is a budget's use at a moment, split as the checkpoint holds it.
type accrual struct {
	start, end time.Time
	// folded is the checkpoint's folded burn in the window; live the burn
	// in the window of what is counted live (pods of selected namespaces,
	// this replica's tombstones and departures not folded yet); lastHour
	// the live burn of the last hour.
	folded, live, lastHour burn.Amounts
}

func (a accrual) used() burn.Amounts { return burn.Amounts{}.Add(a.folded).Add(a.live) }

// accrueLocked is b's use at now with checkpoint cp: cp's folded burn of
// the window, plus the burn in the window up to now of every pod counted,
// each from its foldedPods entry's until.
func (t *Tracker) accrueLocked(b *tracked, cp *checkpoint, now time.Time) accrual {
	start, end := b.window.At(now)
	a := accrual{start: start, end: end, folded: cp.foldedIn(b.window, start, bucketWidth(b.window.Rolling(), t.opts.RollingBuckets))}
	hourAgo := now.Add(-time.Hour)
	count := func(e *podEntry, to time.Time) {
		from := start
		if until, ok := b.untilIn(cp, e.uid); ok && until.After(from) {
			from = until
		}
		if !to.After(from) {
			return
		}
		a.live = a.live.Add(e.timeline.Between(from, to))
		if hourAgo.After(from) {
			from = hourAgo
		}
		a.lastHour = a.lastHour.Add(e.timeline.Between(from, to))
	}
	t.eachCountedLocked(b, func(e *podEntry) { count(e, now) })
	for uid, at := range b.departed {
		e := t.pods[uid]
		if e == nil || t.selectsLocked(b, e.namespace) {
			continue
		}
		count(e, minTime(at, now))
	}
	return a
}

// eachCountedLocked visits the pods of the namespaces b selects now
// (live, and deleted ones this replica still holds).
func (t *Tracker) eachCountedLocked(b *tracked, visit func(*podEntry)) {
	if !b.cluster {
		for _, e := range t.byNS[b.ref.Namespace] {
			visit(e)
		}
		return
	}
	for ns, pods := range t.byNS {
		if !t.selectsLocked(b, ns) {
			continue
		}
		for _, e := range pods {
			visit(e)
		}
	}
}

func (t *Tracker) selectsLocked(b *tracked, ns string) bool {
	lbl, known := t.namespaces[ns]
	return b.selects(ns, lbl, known)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// live reports whether the tracker holds uid as a pod not deleted.
func (t *Tracker) liveLocked(uid types.UID) bool {
	e := t.pods[uid]
	return e != nil && !e.deleted()
}

// heldLocked reports whether the tracker holds uid: a pod live or deleted,
// or dropped lately (gone).
func (t *Tracker) heldLocked(uid types.UID) bool {
	_, gone := t.gone[uid]
	return gone || t.pods[uid] != nil
}
