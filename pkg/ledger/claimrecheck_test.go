package ledger

import (
	"testing"
)

// TestPendingClaimRaisedByLaterSlices attacks a pending claim recorded
// against an incomplete set of ResourceSlices (a restarting replica's claim
// and slice informers fill concurrently; a lagging slice watch): once every
// slice is in, the claim is charged as if it had been recorded after them
// (its largest eligible device), whatever the order; nothing lowers it.
func TestPendingClaimRaisedByLaterSlices(t *testing.T) {
	n1 := gpuSlice("n1", map[string]int64{"gpu-0": 40960})
	n2 := gpuSlice("n2", map[string]int64{"gpu-0": 144384})
	claim := func(l *Ledger) { l.UpsertClaim(wholeClaim("1", "", "")) }
	slice1 := func(l *Ledger) { l.UpsertSlice(n1) }
	slice2 := func(l *Ledger) { l.UpsertSlice(n2) }
	gone2 := func(l *Ledger) { l.DeleteSlice(n2.Name) }
	for _, tc := range []struct {
		name  string
		steps []func(*Ledger)
		want  int64
	}{
		{"slices first", []func(*Ledger){slice1, slice2, claim}, 144384},
		{"claim between the slices", []func(*Ledger){slice1, claim, slice2}, 144384},
		{"claim before any slice", []func(*Ledger){claim, slice1, slice2}, 144384},
		{"the big slice leaves again: the floor holds", []func(*Ledger){slice1, claim, slice2, gone2}, 144384},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newWholeLedger(t)
			for _, s := range tc.steps {
				s(l)
			}
			if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got != tc.want {
				t.Errorf("charged %d MiB with every slice in, want %d", got, tc.want)
			}
		})
	}
}

// TestStaleClaimChargeRechecked attacks UpsertClaim giving up after its
// last try: a slice arrives while each try computes, the last result is
// applied against the slices of before, and the slices' own rechecks ran
// before the claim was recorded. The claim is evaluated again at once, not
// at the next slice event.
func TestStaleClaimChargeRechecked(t *testing.T) {
	l := newWholeLedger(t)
	l.UpsertSlice(gpuSlice("n1", map[string]int64{"gpu-0": 40960}))
	tries := 0
	l.claimComputed = func() {
		tries++
		if tries <= applyTries {
			l.UpsertSlice(gpuSlice("n2", map[string]int64{"gpu-0": 40960 + int64(tries)<<10}))
		}
	}
	l.UpsertClaim(wholeClaim("1", "", ""))
	want := int64(40960 + applyTries<<10)
	if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got != want {
		t.Errorf("charged %d MiB after %d slice changes during the claim's tries, want %d (the last slice's device)", got, tries, want)
	}
}
