package ledger

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

func TestReservationsCountedOnce(t *testing.T) {
	l := newLedger(t)
	l.UpsertQuota(testquota.New("team-a", "q", map[string]string{"limits.nvidia.com/gpumem": "24576"}))
	pending := []reservation.Reservation{{UID: "uid-1", Name: "p1", Demand: nv(1, 12288, 0)}, {UID: "uid-2", Name: "p2", Demand: nv(1, 8192, 0), Unconfirmed: true}}
	if s := l.Namespace("team-a", pending); !same(s.Reserved, nv(2, 20480, 0)) || s.Reservations != 2 || !same(s.Unconfirmed, nv(1, 8192, 0)) || !s.Used.IsZero() {
		t.Fatalf("reserved %v (%d, unconfirmed %v), used %v; want 20480 MiB reserved in 2, 8192 unconfirmed", s.Reserved, s.Reservations, s.Unconfirmed, s.Used)
	}
	if s := l.Namespace("team-a", nil); !s.Reserved.IsZero() {
		t.Fatalf("nothing handed in: reserved %v; the ledger holds no reservations", s.Reserved)
	}
	// The watch records uid-1: its record counts, its reservation does not (HAMi books a pod once).
	p1 := testpod.New("p1").NS("team-a").UID("uid-1").RV("17").App("a", gpu(1), mem(12288)).Build()
	l.UpsertPod(p1)
	if s := l.Namespace("team-a", pending); !same(s.Reserved, nv(1, 8192, 0)) || !same(s.Used, nv(1, 12288, 0)) || s.Reservations != 1 {
		t.Fatalf("recorded: reserved %v (%d) used %v; want 8192 in 1 and 12288 (never both for uid-1)", s.Reserved, s.Reservations, s.Used)
	}
	if got := l.Seen("uid-1"); got != "17" {
		t.Errorf("Seen(uid-1) = %q, want 17", got)
	}
	l.DeletePod(p1)
	if l.Seen("uid-1") != "" {
		t.Error("a deleted pod is still seen")
	}
	// Still handed in (nobody marked it): it counts again, never less than the pod was.
	if s := l.Namespace("team-a", pending); !same(s.Reserved, nv(2, 20480, 0)) || !s.Used.IsZero() {
		t.Fatalf("deleted but still reserved: reserved %v used %v; want 20480 and 0", s.Reserved, s.Used)
	}
	if s := l.Snapshot(map[string][]reservation.Reservation{"team-b": pending}); !same(s.Namespaces["team-b"].Reserved, nv(2, 20480, 0)) || s.Stats.Reservations != 2 {
		t.Fatalf("snapshot of a namespace with reservations only: %+v", s.Namespaces["team-b"])
	}
}

// TestReservationShadowedByName: re-creates of a pod name the ledger holds
// under another UID (they fail with AlreadyExists) must not block the
// namespace, and must count again the moment that older pod is gone.
func TestReservationShadowedByName(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(testpod.New("x").NS("ns").UID("old").App("a", gpu(1), mem(1024)).Build())
	var rs []reservation.Reservation
	for i := range 23 {
		rs = append(rs, reservation.Reservation{UID: types.UID(fmt.Sprint("re-", i)), Name: "x", Demand: nv(1, 1024, 0)})
	}
	if s := l.Namespace("ns", rs); !same(s.Used, nv(1, 1024, 0)) || !s.Reserved.IsZero() {
		t.Fatalf("23 re-creates of x: used %v reserved %v; want 1024 and nothing reserved", s.Used, s.Reserved)
	}
	l.DeletePod(testpod.New("x").NS("ns").UID("old").Build())
	if s := l.Namespace("ns", rs); !same(s.Reserved, nv(23, 23*1024, 0)) {
		t.Fatalf("old pod deleted: reserved %v, want every re-create counted (%d MiB)", s.Reserved, 23*1024)
	}
}
