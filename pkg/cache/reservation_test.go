package cache

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestReservationCycle(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(Options{Settings: effective.DefaultSettings(), Clock: clk})
	l.UpsertQuota(rq("team-a", "q", map[string]string{"limits.nvidia.com/gpumem": "24576"}))

	// assume: two admissions in the same second.
	if err := l.Reserve("uid-1", "team-a", vec(1, 12288, 0), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Reserve("uid-2", "team-a", vec(1, 8192, 0), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := l.Namespace("team-a"); s.Reserved != vec(2, 20480, 0) || s.Reservations != 2 || !s.Used.IsZero() {
		t.Fatalf("reserved %v (%d), used %v; want 20480 MiB reserved in 2", s.Reserved, s.Reservations, s.Used)
	}
	// reserving again replaces.
	if err := l.Reserve("uid-2", "team-a", vec(1, 4096, 0), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 16384 {
		t.Fatalf("re-reserve: reserved %d MiB, want 16384", s.Reserved.MemMiB)
	}
	// confirm: the watch sees uid-1; its record replaces the reservation.
	l.UpsertPod(testpod.New("p1").NS("team-a").UID("uid-1").App("a", gpu(1), mem(12288)).Build())
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 4096 || s.Used.MemMiB != 12288 {
		t.Fatalf("confirmed: reserved %d used %d; want 4096 and 12288 (never both for uid-1)", s.Reserved.MemMiB, s.Used.MemMiB)
	}
	// a pod the ledger knows is not reserved again.
	if err := l.Reserve("uid-1", "team-a", vec(1, 12288, 0), time.Minute); err != nil {
		t.Fatal(err)
	}
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 4096 {
		t.Fatalf("reserve for a known pod: reserved %d, want 4096", s.Reserved.MemMiB)
	}
	// expire: uid-2's create failed later in the chain.
	clk.now = clk.now.Add(30 * time.Second)
	if s := l.Namespace("team-a"); !s.Reserved.IsZero() || s.Reservations != 0 {
		t.Fatalf("expired: reserved %v (%d), want none (expiry is lazy, no sweep needed)", s.Reserved, s.Reservations)
	}
	if st := l.Snapshot().Stats; st.Reservations != 0 {
		t.Errorf("snapshot counts expired reservations: %+v", st)
	}
	if n := l.Sweep(); n != 1 {
		t.Errorf("sweep dropped %d, want 1", n)
	}
	if n := l.Sweep(); n != 0 {
		t.Errorf("second sweep dropped %d, want 0", n)
	}
}

func TestReserveRejectsBadArguments(t *testing.T) {
	l := newLedger(t)
	for _, tc := range []struct {
		name string
		uid  string
		ns   string
		d    effective.Vector
		ttl  time.Duration
	}{
		{"empty uid", "", "ns", vec(1, 1, 0), time.Second},
		{"empty namespace", "u", "", vec(1, 1, 0), time.Second},
		{"zero ttl", "u", "ns", vec(1, 1, 0), 0},
		{"negative demand", "u", "ns", vec(-1, 1, 0), time.Second},
	} {
		if err := l.Reserve(types.UID(tc.uid), tc.ns, tc.d, tc.ttl); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if st := l.Snapshot().Stats; st.Reservations != 0 {
		t.Errorf("rejected reservations recorded: %+v", st)
	}
}

func TestReleaseAndSweepOnReserve(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	l := New(Options{Settings: effective.DefaultSettings(), Clock: clk})
	if err := l.Reserve("a", "ns", vec(1, 100, 0), time.Second); err != nil {
		t.Fatal(err)
	}
	l.Release("a")
	l.Release("a")
	if s := l.Namespace("ns"); s.Reservations != 0 {
		t.Fatalf("after release: %d reservations", s.Reservations)
	}
	if err := l.Reserve("b", "ns", vec(1, 100, 0), time.Second); err != nil {
		t.Fatal(err)
	}
	clk.now = clk.now.Add(2 * time.Second)
	if err := l.Reserve("c", "ns", vec(1, 100, 0), time.Second); err != nil {
		t.Fatal(err)
	}
	l.mu.RLock()
	n := len(l.reservations)
	l.mu.RUnlock()
	if n != 1 {
		t.Errorf("Reserve must sweep expired reservations: %d held, want 1", n)
	}
}
