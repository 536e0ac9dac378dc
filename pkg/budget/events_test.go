package budget

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

type recorded struct{ reasons []string }

func (r *recorded) Eventf(_ runtime.Object, _, reason, format string, args ...any) {
	r.reasons = append(r.reasons, reason+": "+fmt.Sprintf(format, args...))
}

// TestEventsOncePerWindow: each warn threshold, Spent and BudgetOverrun
// are recorded once in a window, whichever replica checkpoints (the
// status before says what was reported), and again in the next window.
func TestEventsOncePerWindow(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "1")
	api := fakeAPI(t, b)
	tr.UpsertBudget(b)
	rec := &recorded{}
	leader := func(id string) *Checkpointer {
		return NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: id, Interval: time.Minute,
			WarnPercents: []int64{95, 80}, Recorder: rec, Clock: clk})
	}
	tr.UpsertPod(running(gpuPod("ml", "p", 1, t0), t0))
	steps := []struct {
		at   time.Duration
		want []string
	}{
		{30 * time.Minute, nil},
		{48 * time.Minute, []string{EventThreshold}},
		{50 * time.Minute, nil},
		{57 * time.Minute, []string{EventThreshold}},
		{60 * time.Minute, []string{EventSpent}},
		{70 * time.Minute, []string{EventOverrun}},
		{80 * time.Minute, nil},
	}
	for i, s := range steps {
		clk.SetTime(t0.Add(s.at))
		rec.reasons = nil
		leader(fmt.Sprint("r", i%2)).CheckpointAll(t.Context()) // the leader changes every step
		var got []string
		for _, r := range rec.reasons {
			got = append(got, r[:indexColon(r)])
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("at %v: events %q, want reasons %v", s.at, rec.reasons, s.want)
		}
	}
	clk.SetTime(time.Date(2027, 4, 1, 1, 0, 0, 0, time.UTC)) // the next month: the pod ran its whole first hour in it
	rec.reasons = nil
	leader("r9").CheckpointAll(t.Context())
	if len(rec.reasons) != 3 {
		t.Errorf("the next window: events %q, want both thresholds and Spent again", rec.reasons)
	}
}

func indexColon(s string) int {
	for i := range s {
		if s[i] == ':' {
			return i
		}
	}
	return len(s)
}
