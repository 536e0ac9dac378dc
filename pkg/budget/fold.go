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
// checkpoint read, with the burn of every pod it counts up to now folded
// in (each from its foldedPods entry's until, which moves to now, or to
// the pod's end: this replica's tombstones of pods deleted, the
// departures of namespaces that left a GPUClusterBudget, the live pods),
// and the status computed from it (used RECOMPUTED from
// folded + the live pods, never incremented: writing it twice, or two
// writers, add nothing). A calendar window's folded burn starts over at
// its rollover. A checkpoint time ahead of now (another replica's clock)
// is taken as now. False when the tracker does not hold the budget.
func (t *Tracker) Fold(ref Ref, read *gpuadmitv1.BudgetStatus, generation int64, now time.Time, writer string) (gpuadmitv1.BudgetStatus, Standing, bool) {
	st, s, _, ok := t.fold(ref, read, generation, now, writer)
	return st, s, ok
}

// fold is Fold, with the entries of this replica's deleted pods the
// checkpoint's bound left out (their burn folded): once the status is
// written, release records them.
func (t *Tracker) fold(ref Ref, read *gpuadmitv1.BudgetStatus, generation int64, now time.Time, writer string) (gpuadmitv1.BudgetStatus, Standing, map[types.UID]time.Time, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	b := t.budgets[ref]
	if b == nil {
		return gpuadmitv1.BudgetStatus{}, Standing{}, nil, false
	}
	nc := t.foldLocked(b, t.readCheckpoint(read.Checkpoint), now, writer)
	a := t.accrueLocked(b, &nc, now)
	st := t.standingOf(b, a)
	return t.statusOf(b, st, &nc, read, generation, now), st, nc.dropped, true
}

// foldLocked is the checkpoint cp with what this replica holds folded in.
func (t *Tracker) foldLocked(b *tracked, cp checkpoint, now time.Time, writer string) checkpoint {
	start, _ := b.window.At(now)
	f := folder{start: start, width: bucketWidth(b.window.Rolling(), t.opts.RollingBuckets), rolling: b.window.Rolling() != 0,
		nc:       checkpoint{time: now, writer: writer, windowStart: start, foldedPods: maps.Clone(cp.foldedPods)},
		released: func(uid types.UID) time.Time { return b.releasedIn(&cp, uid) }}
	if f.nc.foldedPods == nil {
		f.nc.foldedPods = map[types.UID]time.Time{}
	}
	if f.rolling {
		for _, bk := range cp.buckets {
			if bk.start.Add(f.width).After(start) {
				f.nc.buckets = append(f.nc.buckets, bucket{start: bk.start, amounts: burn.Amounts{}.Add(bk.amounts)})
			}
		}
	} else {
		f.nc.folded = cp.foldedIn(b.window, start, f.width)
	}
	var live []*podEntry
	t.eachCountedLocked(b, func(e *podEntry) {
		switch {
		case len(e.timeline.Segments) == 0:
		case e.deleted():
			f.fold(e, minTime(e.timeline.End, now))
		default:
			live = append(live, e)
		}
	})
	for uid, at := range b.departed {
		if e := t.pods[uid]; e != nil && !t.selectsLocked(b, e.namespace) && len(e.timeline.Segments) > 0 {
			f.fold(e, endBy(e, minTime(at, now)))
		}
	}
	// The live pods' burn so far is folded too (their entries' until moves
	// to now), so that a pod deleted unseen by the next leader loses at
	// most the burn since this checkpoint; beyond maxLiveFolded entries, a
	// live pod without one keeps counting from the window's start (the
	// status stays well under the API server's object size).
	for _, e := range live {
		if _, ok := f.nc.foldedPods[e.uid]; ok || len(f.nc.foldedPods) < maxLiveFolded {
			f.fold(e, endBy(e, now))
		}
	}
	t.pruneFoldedPodsLocked(&f.nc, start, now)
	return f.nc
}

// endBy is the earlier of to and e's end (if it ended).
func endBy(e *podEntry, to time.Time) time.Time {
	if end := e.timeline.End; !end.IsZero() {
		return minTime(to, end)
	}
	return to
}

// folder folds pods' burn into the checkpoint nc of the window from start.
type folder struct {
	nc      checkpoint
	start   time.Time
	width   time.Duration
	rolling bool
	// released is how far a pod's burn is folded without an entry (a
	// deleted pod's entry this replica's checkpoint left out).
	released func(types.UID) time.Time
}

// fold adds e's burn from its until (or the window's start) to to, and
// moves its until to to.
func (f *folder) fold(e *podEntry, to time.Time) {
	from := maxTime(maxTime(f.start, f.nc.foldedPods[e.uid]), f.released(e.uid))
	if !to.After(from) {
		return // folded up to to already, or before the window
	}
	if f.rolling {
		f.nc.addBuckets(e.timeline, from, to, f.width)
	} else {
		f.nc.folded = f.nc.folded.Add(e.timeline.Between(from, to))
	}
	f.nc.foldedPods[e.uid] = to
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
// anyway), and those of pods this replica does not hold (not live, no
// tombstone, not dropped within keepDeletedFor checkpoint intervals: every
// replica has seen the checkpoint folding them since) that ended
// keepDeletedFor intervals ago; beyond MaxFoldedPods, the oldest of
// deleted pods first, then the oldest.
func (t *Tracker) pruneFoldedPodsLocked(cp *checkpoint, start, now time.Time) {
	expire := now.Add(-keepDeletedFor * t.opts.CheckpointInterval)
	for uid, until := range cp.foldedPods {
		if !until.After(start) || (!t.heldLocked(uid) && until.Before(expire)) {
			delete(cp.foldedPods, uid) // not needed: nothing counts it again
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
		if e := t.pods[uid]; e != nil && e.deleted() {
			if cp.dropped == nil {
				cp.dropped = map[types.UID]time.Time{}
			}
			cp.dropped[uid] = cp.foldedPods[uid]
		}
		delete(cp.foldedPods, uid)
	}
}

// trimFolded keeps at most limit of cp's foldedPods entries, dropping
// only those of pods not live here, the oldest first; it returns the
// dropped entries of this replica's deleted pods (their burn is in cp's
// folded: released once written, so never counted again). A live pod's
// entry is never dropped (its burn so far is folded: without it the pod
// would count again from the window's start): false when the live pods'
// entries alone pass limit.
func (t *Tracker) trimFolded(cp *gpuadmitv1.BudgetCheckpoint, limit int) (map[types.UID]time.Time, bool) {
	if cp == nil || len(cp.FoldedPods) <= limit {
		return nil, true
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	var gone []int
	for i, p := range cp.FoldedPods {
		if !t.liveLocked(types.UID(p.UID)) {
			gone = append(gone, i)
		}
	}
	over := len(cp.FoldedPods) - max(limit, 0)
	if over > len(gone) {
		return nil, false
	}
	slices.SortStableFunc(gone, func(a, b int) int { return cp.FoldedPods[a].Until.Compare(cp.FoldedPods[b].Until.Time) })
	drop := make(map[int]bool, over)
	dropped := map[types.UID]time.Time{}
	for _, i := range gone[:over] {
		drop[i] = true
		uid := types.UID(cp.FoldedPods[i].UID)
		if e := t.pods[uid]; e != nil && e.deleted() {
			dropped[uid] = cp.FoldedPods[i].Until.Time
		}
	}
	out := cp.FoldedPods[:0]
	for i, p := range cp.FoldedPods {
		if !drop[i] {
			out = append(out, p)
		}
	}
	cp.FoldedPods = out
	return dropped, true
}
