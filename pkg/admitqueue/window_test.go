package admitqueue

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestWindowFollowsObservedLatency: a reservation whose pod took 3 s to be
// recorded (a loaded API server storing creates slowly) makes the next
// reservations' pods be read 6 s after they were first seen, not after the
// configured 1 s: a read then would find a pod about to be stored absent
// and end its reservation (over-admission). Faster recordings bring the
// window back down, never below the configured one.
func TestWindowFollowsObservedLatency(t *testing.T) {
	s, _, _, clk := newStore(t, fakeClient(t), "r0")
	t0 := clk.Now()
	if got := s.dueAt("slow").Sub(t0); got != time.Second {
		t.Fatalf("first reservation due after %s, want the configured 1s", got)
	}
	clk.SetTime(t0.Add(3 * time.Second))
	s.absence.recorded("slow", clk.Now(), time.Time{})
	t1 := clk.Now()
	if got := s.dueAt("next").Sub(t1); got != 6*time.Second {
		t.Errorf("after a 3s recording, a new reservation is due after %s, want 6s", got)
	}
	if got := s.dueAt("slow").Sub(t0); got != 6*time.Second {
		t.Errorf("an earlier reservation not read yet is due %s after it was seen, want 6s (the window applies when it is read)", got)
	}
	for i := range 40 {
		uid := "fast-" + string(rune('a'+i))
		s.dueAt(types.UID(uid))
		clk.SetTime(clk.Now().Add(10 * time.Millisecond))
		s.absence.recorded(types.UID(uid), clk.Now(), time.Time{})
	}
	if got := s.dueAt("later").Sub(clk.Now()); got != time.Second {
		t.Errorf("after 40 fast recordings a new reservation is due after %s, want the configured 1s again", got)
	}
}

// TestWindowIgnoresOutages: a reservation that took 16 s to be recorded
// because this replica was cut off from the API server meanwhile (its
// liveness made it suspect after the reservation was seen) leaves the
// window as configured: after an outage, ghost reservations end as fast as
// before it.
func TestWindowIgnoresOutages(t *testing.T) {
	s, _, _, clk := newStore(t, fakeClient(t), "r0")
	t0 := clk.Now()
	s.dueAt("during-outage")
	clk.SetTime(t0.Add(16 * time.Second))
	s.absence.recorded("during-outage", clk.Now(), t0.Add(5*time.Second))
	if got := s.dueAt("next").Sub(clk.Now()); got != time.Second {
		t.Errorf("after a recording slowed by an outage, a new reservation is due after %s, want the configured 1s", got)
	}
	// One seen after the outage still teaches.
	s.dueAt("after")
	clk.SetTime(clk.Now().Add(3 * time.Second))
	s.absence.recorded("after", clk.Now(), t0.Add(5*time.Second))
	if got := s.dueAt("next-2").Sub(clk.Now()); got != 6*time.Second {
		t.Errorf("after a 3s recording past the outage, a new reservation is due after %s, want 6s", got)
	}
}

// TestWaitCovers: the check of the review budget against confirmAfter
// refuses the defaults beside a 10 s webhook (confirmAfter 12 s, budget
// 8 s), and names what it needs.
func TestWaitCovers(t *testing.T) {
	for _, tt := range []struct {
		review, confirm, need time.Duration
		ok                    bool
	}{
		{8 * time.Second, confirmMargin, 5 * time.Second, true},                 // no other webhook
		{8 * time.Second, 12 * time.Second, 15 * time.Second, false},            // Kyverno beside the defaults
		{15 * time.Second, 12 * time.Second, 15 * time.Second, true},            // the fix
		{28 * time.Second, unknownWindow, unknownWindow + 3*time.Second, false}, // configurations unreadable
	} {
		if need, ok := WaitCovers(tt.review, tt.confirm); need != tt.need || ok != tt.ok {
			t.Errorf("WaitCovers(%s, %s) = %s, %v; want %s, %v", tt.review, tt.confirm, need, ok, tt.need, tt.ok)
		}
	}
}
