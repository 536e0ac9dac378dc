package reservation_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// records is a ledger's view for Count: recorded UIDs, gone claims, and
// the names recorded objects hold with their charges.
type records struct {
	recorded, gone map[types.UID]bool
	holders        map[string]holder
}

type holder struct {
	uid  types.UID
	used effective.Usage
}

func (r records) Recorded(uid types.UID) bool { return r.recorded[uid] }
func (r records) Gone(uid types.UID) bool     { return r.gone[uid] }
func (r records) NameHolder(_, name string, uid types.UID) (effective.Usage, bool) {
	h, ok := r.holders[name]
	if !ok || h.uid == uid {
		return nil, false
	}
	return h.used, true
}

func mem(mib int64) effective.Usage {
	return effective.Usage{"nvidia": {GPU: 1, MemMiB: mib}}
}

func res(uid, name string, mib int64, unconfirmed bool) reservation.Reservation {
	return reservation.Reservation{UID: types.UID(uid), Name: name, Demand: mem(mib), Unconfirmed: unconfirmed}
}

// TestCountNameHeldByAnother attacks the name rule: a tenant deletes a
// small recorded pod and re-creates its name larger before the watch heard
// of the delete (the red team's bypass: the re-create counted nothing while
// the small pod's record stood for it). What counts is the larger of the
// holder and the largest re-create, per dimension: never less than either.
func TestCountNameHeldByAnother(t *testing.T) {
	held := records{holders: map[string]holder{"a": {uid: "old-a", used: mem(1024)}}}
	tests := []struct {
		name        string
		pending     []reservation.Reservation
		wantMiB     int64
		wantUnconf  int64
		wantCounted int
	}{
		{"a re-create as large as the holder adds nothing", []reservation.Reservation{res("new-a", "a", 1024, false)}, 0, 0, 0},
		{"a smaller re-create adds nothing", []reservation.Reservation{res("new-a", "a", 512, false)}, 0, 0, 0},
		{"a larger re-create adds its excess over the holder", []reservation.Reservation{res("new-a", "a", 9216, false)}, 8192, 0, 1},
		{"the red team's pair: a re-created larger beside a new b", []reservation.Reservation{
			res("new-a", "a", 9216, true), res("b", "b", 9216, true)}, 8192 + 9216, 8192 + 9216, 2},
		{"retries of one name count the largest once", []reservation.Reservation{
			res("r1", "a", 4096, false), res("r2", "a", 9216, true), res("r3", "a", 2048, false)}, 8192, 8192, 1},
		{"the holder's own reservation is its record", []reservation.Reservation{res("old-a", "a", 9216, false)}, 9216, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reservation.Count(tt.pending, "ns", held)
			if m := got.Reserved.Of("nvidia").MemMiB; m != tt.wantMiB || got.Unconfirmed.Of("nvidia").MemMiB != tt.wantUnconf || got.Count != tt.wantCounted {
				t.Fatalf("reserved %d MiB, unconfirmed %d MiB, counted %d; want %d, %d, %d",
					m, got.Unconfirmed.Of("nvidia").MemMiB, got.Count, tt.wantMiB, tt.wantUnconf, tt.wantCounted)
			}
		})
	}
}

// TestCountNeverBelowWhatCanExist: for random holders and re-creates, the
// holder's charge plus what Count adds covers every state the namespace
// can be in (the holder alone, or any one re-create of its name in its
// place, beside every reservation of a free name), per dimension.
func TestCountNeverBelowWhatCanExist(t *testing.T) {
	seed := uint64(rand.Int64())
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 2000 {
		rec := records{holders: map[string]holder{}}
		var pending []reservation.Reservation
		names := []string{"a", "b", "c"}
		for _, n := range names[:rng.IntN(3)] {
			rec.holders[n] = holder{uid: types.UID("old-" + n), used: mem(rng.Int64N(8192))}
		}
		for i := range rng.IntN(6) {
			n := names[rng.IntN(len(names))]
			pending = append(pending, res(fmt.Sprint("u", i), n, rng.Int64N(8192), rng.IntN(2) == 0))
		}
		got := reservation.Count(pending, "ns", rec).Reserved.Of("nvidia").MemMiB
		// The worst state: per name, the largest of its holder and its
		// re-creates; a free name's reservations all at once (distinct
		// UIDs of a free name: at most one exists, but each counts).
		worst, heldTotal := int64(0), int64(0)
		for _, n := range names {
			h := rec.holders[n].used.Of("nvidia").MemMiB
			heldTotal += h
			largest, sum := h, int64(0)
			for _, r := range pending {
				if r.Name == n {
					largest = max(largest, r.Demand.Of("nvidia").MemMiB)
					sum += r.Demand.Of("nvidia").MemMiB
				}
			}
			if _, ok := rec.holders[n]; ok {
				worst += largest
			} else {
				worst += sum
			}
		}
		if heldTotal+got < worst {
			t.Fatalf("seed %d, round %d: holders %d MiB + counted %d MiB < %d MiB the namespace can hold (%v, holders %v)",
				seed, round, heldTotal, got, worst, pending, rec.holders)
		}
	}
}
