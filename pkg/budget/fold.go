package budget

import (
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// Fold is what the elected replica writes for budget ref at now, from the
// status it read (the object its compare-and-swap carries): the
// checkpoint read, with this replica's tombstones (pods deleted) and
// departures (namespaces that left a GPUClusterBudget) not folded in it
// yet folded in, and the status computed from it (used RECOMPUTED from
// folded + the live pods, never incremented: writing it twice, or two
// writers, add nothing). A calendar window's folded burn starts over at
// its rollover. A checkpoint time ahead of now (another replica's clock)
// is taken as now. False when the tracker does not hold the budget.
func (t *Tracker) Fold(ref Ref, read *gpuadmitv1.BudgetStatus, generation int64, now time.Time, writer string) (gpuadmitv1.BudgetStatus, Standing, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	b := t.budgets[ref]
	if b == nil {
		return gpuadmitv1.BudgetStatus{}, Standing{}, false
	}
	nc := t.foldLocked(b, t.readCheckpoint(read.Checkpoint), now, writer)
	a := t.accrueLocked(b, &nc, now)
	st := t.standingOf(b, a)
	return t.statusOf(b, st, &nc, read, generation, now), st, true
}

// foldLocked is the checkpoint cp with what this replica holds folded in.
func (t *Tracker) foldLocked(b *tracked, cp checkpoint, now time.Time, writer string) checkpoint {
	start, _ := b.window.At(now)
	width := bucketWidth(b.window.Rolling(), t.opts.RollingBuckets)
	nc := checkpoint{time: now, writer: writer, windowStart: start, foldedPods: maps.Clone(cp.foldedPods)}
	if nc.foldedPods == nil {
		nc.foldedPods = map[types.UID]time.Time{}
	}
	rolling := b.window.Rolling() != 0
	if rolling {
		for _, bk := range cp.buckets {
			if bk.start.Add(width).After(start) {
				nc.buckets = append(nc.buckets, bucket{start: bk.start, amounts: burn.Amounts{}.Add(bk.amounts)})
			}
		}
	} else {
		nc.folded = cp.foldedIn(b.window, start, width)
	}
	fold := func(e *podEntry, to time.Time) {
		from := maxTime(start, nc.foldedPods[e.uid])
		if to.After(from) {
			if rolling {
				nc.addBuckets(e.timeline, from, to, width)
			} else {
				nc.folded = nc.folded.Add(e.timeline.Between(from, to))
			}
		}
		if to.After(nc.foldedPods[e.uid]) {
			nc.foldedPods[e.uid] = to
		}
	}
	t.eachCountedLocked(b, func(e *podEntry) {
		if e.deleted() && len(e.timeline.Segments) > 0 && !e.timeline.End.IsZero() {
			fold(e, minTime(e.timeline.End, now))
		}
	})
	for uid, at := range b.departed {
		if e := t.pods[uid]; e != nil && !t.selectsLocked(b, e.namespace) && len(e.timeline.Segments) > 0 {
			to := minTime(at, now)
			if end := e.timeline.End; !end.IsZero() {
				to = minTime(to, end)
			}
			fold(e, to)
		}
	}
	t.pruneFoldedPodsLocked(&nc, start, now)
	return nc
}

// addBuckets folds tl's burn in [from, to) into the buckets it burned in.
func (cp *checkpoint) addBuckets(tl burn.Timeline, from, to time.Time, width time.Duration) {
	for s := from.Truncate(width); s.Before(to); s = s.Add(width) {
		amounts := tl.Between(maxTime(from, s), minTime(to, s.Add(width)))
		if len(amounts) == 0 {
			continue
		}
		i, found := slices.BinarySearchFunc(cp.buckets, s, func(b bucket, t time.Time) int { return b.start.Compare(t) })
		if !found {
			cp.buckets = slices.Insert(cp.buckets, i, bucket{start: s})
		}
		cp.buckets[i].amounts = cp.buckets[i].amounts.Add(amounts)
	}
}

// pruneFoldedPodsLocked drops the foldedPods entries no longer needed:
// those ending before the window (a pod counts from the window's start
// anyway), those of pods deleted keepDeletedFor checkpoint intervals ago;
// beyond MaxFoldedPods, the oldest of deleted pods first, then the oldest.
func (t *Tracker) pruneFoldedPodsLocked(cp *checkpoint, start, now time.Time) {
	expire := now.Add(-keepDeletedFor * t.opts.CheckpointInterval)
	for uid, until := range cp.foldedPods {
		if !until.After(start) || (!t.liveLocked(uid) && until.Before(expire)) {
			delete(cp.foldedPods, uid)
		}
	}
	if len(cp.foldedPods) <= MaxFoldedPods {
		return
	}
	uids := slices.Collect(maps.Keys(cp.foldedPods))
	slices.SortFunc(uids, func(a, b types.UID) int {
		la, lb := t.liveLocked(a), t.liveLocked(b)
		if la != lb {
			if la {
				return 1
			}
			return -1
		}
		return cp.foldedPods[a].Compare(cp.foldedPods[b])
	})
	for _, uid := range uids[:len(uids)-MaxFoldedPods] {
		delete(cp.foldedPods, uid)
	}
}
