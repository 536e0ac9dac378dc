package cache

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/testquota"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestReservationCycle(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var ended []string
	l := New(Options{Settings: effective.DefaultSettings(), Clock: clk, OnReservationEnd: func(r string) { ended = append(ended, r) }})
	l.UpsertQuota(testquota.New("team-a", "q", map[string]string{"limits.nvidia.com/gpumem": "24576"}))

	// assume: two admissions in the same second.
	if err := l.Reserve("uid-1", "team-a", "p1", vec(1, 12288, 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Reserve("uid-2", "team-a", "p2", vec(1, 8192, 0)); err != nil {
		t.Fatal(err)
	}
	if s := l.Namespace("team-a"); s.Reserved != vec(2, 20480, 0) || s.Reservations != 2 || !s.Used.IsZero() {
		t.Fatalf("reserved %v (%d), used %v; want 20480 MiB reserved in 2", s.Reserved, s.Reservations, s.Used)
	}
	// reserving again replaces.
	if err := l.Reserve("uid-2", "team-a", "p2", vec(1, 4096, 0)); err != nil {
		t.Fatal(err)
	}
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 16384 {
		t.Fatalf("re-reserve: reserved %d MiB, want 16384", s.Reserved.MemMiB)
	}
	// the watch records uid-1: its record replaces the reservation.
	l.UpsertPod(testpod.New("p1").NS("team-a").UID("uid-1").App("a", gpu(1), mem(12288)).Build())
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 4096 || s.Used.MemMiB != 12288 {
		t.Fatalf("recorded: reserved %d used %d; want 4096 and 12288 (never both for uid-1)", s.Reserved.MemMiB, s.Used.MemMiB)
	}
	// a pod the ledger knows is not reserved again.
	if err := l.Reserve("uid-1", "team-a", "p1", vec(1, 12288, 0)); err != nil {
		t.Fatal(err)
	}
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 4096 {
		t.Fatalf("reserve for a known pod: reserved %d, want 4096", s.Reserved.MemMiB)
	}
	// time alone never ends a reservation (a stalled watch must not turn into over-admission).
	clk.now = clk.now.Add(24 * time.Hour)
	if s := l.Namespace("team-a"); s.Reserved.MemMiB != 4096 || s.Reservations != 1 {
		t.Fatalf("a day later: reserved %v (%d); a reservation must never lapse on a timer", s.Reserved, s.Reservations)
	}
	// only a confirmed absence ends it.
	due := l.DueReservations(10)
	if len(due) != 1 || due[0].UID != "uid-2" || due[0].Name != "p2" || due[0].Namespace != "team-a" {
		t.Fatalf("due %+v, want uid-2", due)
	}
	if again := l.DueReservations(10); len(again) != 0 {
		t.Fatalf("a reservation whose read is in flight is due again: %+v", again)
	}
	if !l.ConfirmAbsent("uid-2") || l.ConfirmAbsent("uid-2") {
		t.Fatal("ConfirmAbsent must end the reservation exactly once")
	}
	if s := l.Namespace("team-a"); !s.Reserved.IsZero() || s.Reservations != 0 {
		t.Fatalf("after absence confirmed: reserved %v (%d)", s.Reserved, s.Reservations)
	}
	if !slices.Equal(ended, []string{EndRecorded, EndAbsent}) {
		t.Errorf("end reasons %q", ended)
	}
}

// TestReservationNotDueBeforeConfirmAfter: a create still in flight is not
// read before ConfirmAfter, and a pod that exists is rechecked with backoff.
func TestReservationNotDueBeforeConfirmAfter(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	l := New(Options{Settings: effective.DefaultSettings(), Clock: clk, ConfirmAfter: 5 * time.Second, RecheckMax: 30 * time.Second})
	if err := l.Reserve("u", "ns", "p", vec(1, 1, 0)); err != nil {
		t.Fatal(err)
	}
	var checks []time.Duration
	start := clk.now
	for range 200 {
		if len(l.DueReservations(1)) == 1 {
			checks = append(checks, clk.now.Sub(start))
		}
		clk.now = clk.now.Add(time.Second)
	}
	if len(checks) < 3 || checks[0] != 5*time.Second || checks[1] <= checks[0]+5*time.Second {
		t.Errorf("checks at %v: want the first at 5s, then backing off", checks)
	}
	for i := 1; i < len(checks); i++ {
		if gap := checks[i] - checks[i-1]; gap > 30*time.Second {
			t.Errorf("gap %v between checks exceeds RecheckMax", gap)
		}
	}
}

// TestReservationShadowedByName: re-creates of a pod name the ledger holds
// under another UID (they fail with AlreadyExists) must not block the
// namespace, and must count again the moment that older pod is gone.
func TestReservationShadowedByName(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(testpod.New("x").NS("ns").UID("old").App("a", gpu(1), mem(1024)).Build())
	for i := range 23 {
		if err := l.Reserve(types.UID(rune('a'+i)), "ns", "x", vec(1, 1024, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if s := l.Namespace("ns"); s.Used.MemMiB != 1024 || !s.Reserved.IsZero() {
		t.Fatalf("23 re-creates of x: used %d reserved %v; want 1024 and nothing reserved", s.Used.MemMiB, s.Reserved)
	}
	// The old pod is deleted: one of the re-creates may have succeeded; all count until confirmed.
	l.DeletePod(testpod.New("x").NS("ns").UID("old").Build())
	if s := l.Namespace("ns"); s.Reserved.MemMiB != 23*1024 {
		t.Fatalf("old pod deleted: reserved %d MiB, want every re-create counted (%d)", s.Reserved.MemMiB, 23*1024)
	}
}

func TestReserveRejectsBadArguments(t *testing.T) {
	l := newLedger(t)
	for _, tc := range []struct {
		name string
		uid  string
		ns   string
		d    effective.Vector
	}{
		{"empty uid", "", "ns", vec(1, 1, 0)},
		{"empty namespace", "u", "", vec(1, 1, 0)},
		{"negative demand", "u", "ns", vec(-1, 1, 0)},
	} {
		if err := l.Reserve(types.UID(tc.uid), tc.ns, "p", tc.d); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if st := l.Stats(); st.Reservations != 0 {
		t.Errorf("rejected reservations recorded: %+v", st)
	}
}

// TestConfirmer: a reservation ends only when the read says the pod does
// not exist (not found, or the name holds another UID); a pod that exists
// (the watch lags) or a failed read keeps it.
func TestConfirmer(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	l := New(Options{Settings: effective.DefaultSettings(), Clock: clk})
	world := map[string]*corev1.Pod{
		"ns/exists":  testpod.New("exists").NS("ns").UID("u-exists").Build(),
		"ns/renamed": testpod.New("renamed").NS("ns").UID("someone-else").Build(),
	}
	c := &Confirmer{ledger: l, opts: ConfirmerOptions{PerTick: 10, Timeout: time.Second}, read: func(_ context.Context, ns, name string) (*corev1.Pod, error) {
		if name == "flaky" {
			return nil, errors.New("connection reset by peer")
		}
		if p, ok := world[ns+"/"+name]; ok {
			return p, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}}
	for uid, name := range map[types.UID]string{"u-exists": "exists", "u-renamed": "renamed", "u-gone": "gone", "u-flaky": "flaky", "u-noname": ""} {
		if err := l.Reserve(uid, "ns", name, vec(1, 100, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Check(t.Context()); n != 0 {
		t.Fatalf("ended %d before ConfirmAfter", n)
	}
	clk.now = clk.now.Add(time.Minute)
	if n := c.Check(t.Context()); n != 3 {
		t.Fatalf("ended %d, want 3 (gone, renamed, no name)", n)
	}
	s := l.Namespace("ns")
	if s.Reservations != 2 || s.Reserved.MemMiB != 200 {
		t.Fatalf("kept %d reservations (%d MiB), want exists and flaky", s.Reservations, s.Reserved.MemMiB)
	}
}
