package budget

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// releasedEntry is a deleted pod's foldedPods entry that a checkpoint
// written by this replica left out (the checkpoint's bound, or a status
// too large for the API server) while its burn up to until is in that
// checkpoint's folded total. at is the written checkpoint's time: the
// entry holds for a checkpoint read at or after it (one written later
// folds on from it), never for an older one still being read.
type releasedEntry struct {
	until, at time.Time
}

// releasedIn is uid's released entry valid for checkpoint cp.
func (b *tracked) releasedIn(cp *checkpoint, uid types.UID) time.Time {
	r, ok := b.released[uid]
	if !ok || cp.time.Before(r.at) {
		return time.Time{}
	}
	return r.until
}

// untilIn is how far b counts uid as folded in checkpoint cp: its
// foldedPods entry, the entry the fold of cp dropped, or its released
// entry.
func (b *tracked) untilIn(cp *checkpoint, uid types.UID) (time.Time, bool) {
	until, ok := cp.foldedPods[uid]
	if d, dropped := cp.dropped[uid]; dropped && d.After(until) {
		until, ok = d, true
	}
	if r := b.releasedIn(cp, uid); r.After(until) {
		return r, true
	}
	return until, ok
}

// release records, after ref's checkpoint written at `at` succeeded, the
// entries of deleted pods it left out (their burn is in its folded
// total), so that this replica never counts them again: their tombstones
// are dropped as soon as no budget needs them (their UIDs kept in gone,
// so that a lagging list does not bring them back).
func (t *Tracker) release(ref Ref, at time.Time, sets ...map[types.UID]time.Time) {
	dropped := map[types.UID]time.Time{}
	for _, s := range sets {
		maps.Copy(dropped, s)
	}
	if len(dropped) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.budgets[ref]
	if b == nil {
		return
	}
	if b.released == nil {
		b.released = map[types.UID]releasedEntry{}
	}
	at = at.Truncate(time.Second) // a status's time has whole seconds
	for uid, until := range dropped {
		if e := t.pods[uid]; e != nil && e.deleted() {
			b.released[uid] = releasedEntry{until: until, at: at}
		}
	}
	starts := t.windowStartsLocked(t.clock.Now())
	for uid := range dropped {
		if e := t.tombstones[uid]; e != nil && !t.neededLocked(e, starts) {
			t.dropLocked(e, t.clock.Now())
		}
	}
}

// forgetReleasedLocked drops uid's released entries (the pod is no longer
// held: gone keeps it from coming back).
func (t *Tracker) forgetReleasedLocked(uid types.UID) {
	for _, b := range t.budgets {
		delete(b.released, uid)
	}
}
