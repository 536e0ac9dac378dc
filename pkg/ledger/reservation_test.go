package ledger

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
)

func TestReservationMirror(t *testing.T) {
	l := newLedger(t)
	l.UpsertQuota(testquota.New("team-a", "q", map[string]string{"limits.nvidia.com/gpumem": "24576"}))
	l.SetReservations("team-a", []Reservation{{UID: "uid-1", Name: "p1", Demand: vec(1, 12288, 0)}, {UID: "uid-2", Name: "p2", Demand: vec(1, 8192, 0)}})
	if s := l.Namespace("team-a"); s.Reserved != vec(2, 20480, 0) || s.Reservations != 2 || !s.Used.IsZero() {
		t.Fatalf("reserved %v (%d), used %v; want 20480 MiB reserved in 2", s.Reserved, s.Reservations, s.Used)
	}
	// The watch records uid-1: its record replaces the reservation at once.
	p1 := testpod.New("p1").NS("team-a").UID("uid-1").RV("17").App("a", gpu(1), mem(12288)).Build()
	l.UpsertPod(p1)
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 8192 || s.Used.MemMiB != 12288 {
		t.Fatalf("recorded: reserved %d used %d; want 8192 and 12288 (never both for uid-1)", s.Reserved.MemMiB, s.Used.MemMiB)
	}
	if got := l.Seen("uid-1"); got != "17" {
		t.Errorf("Seen(uid-1) = %q, want 17", got)
	}
	// The object read again still lists uid-1 (another replica has not recorded it): never counted twice.
	l.SetReservations("team-a", []Reservation{{UID: "uid-1", Name: "p1", Demand: vec(1, 12288, 0)}, {UID: "uid-2", Name: "p2", Demand: vec(1, 8192, 0)}})
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 8192 || s.Reservations != 1 {
		t.Fatalf("re-read: reserved %d in %d, want uid-2 alone", s.Reserved.MemMiB, s.Reservations)
	}
	// The object no longer lists uid-2: gone from the mirror.
	l.SetReservations("team-a", nil)
	if s := l.Namespace("team-a"); !s.Reserved.IsZero() || s.Reservations != 0 {
		t.Fatalf("after the object dropped uid-2: reserved %v (%d)", s.Reserved, s.Reservations)
	}
	l.DeletePod(p1)
	if l.Seen("uid-1") != "" {
		t.Error("a deleted pod is still seen")
	}
}

// TestReservationShadowedByName: re-creates of a pod name the ledger holds
// under another UID (they fail with AlreadyExists) must not block the
// namespace, and must count again the moment that older pod is gone.
func TestReservationShadowedByName(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(testpod.New("x").NS("ns").UID("old").App("a", gpu(1), mem(1024)).Build())
	var rs []Reservation
	for i := range 23 {
		rs = append(rs, Reservation{UID: types.UID(fmt.Sprint("re-", i)), Name: "x", Demand: vec(1, 1024, 0)})
	}
	l.SetReservations("ns", rs)
	if s := l.Namespace("ns"); s.Used.MemMiB != 1024 || !s.Reserved.IsZero() {
		t.Fatalf("23 re-creates of x: used %d reserved %v; want 1024 and nothing reserved", s.Used.MemMiB, s.Reserved)
	}
	l.DeletePod(testpod.New("x").NS("ns").UID("old").Build())
	if s := l.Namespace("ns"); s.Reserved.MemMiB != 23*1024 {
		t.Fatalf("old pod deleted: reserved %d MiB, want every re-create counted (%d)", s.Reserved.MemMiB, 23*1024)
	}
}
