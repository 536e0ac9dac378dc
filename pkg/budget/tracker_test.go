package budget

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// TestInitCollapse: a pod burns its full demand (its init container's two
// devices) while the init container runs, then its steady demand (one):
// the ledger's charge of each stage, from the node's timestamps.
func TestInitCollapse(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "10")
	tr.UpsertBudget(b)
	p := testpod.New("train").NS("ml").Init("fetch", testpod.GPU(2)).App("main", testpod.GPU(1)).Build()
	p.CreationTimestamp = metav1.NewTime(t0)
	initRunning := p.DeepCopy()
	initRunning.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}
	tr.UpsertPod(initRunning)
	clk.SetTime(t0.Add(10 * time.Minute))
	steady := running(p, t0.Add(10*time.Minute))
	steady.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(10 * time.Minute))}}}}
	tr.UpsertPod(steady)
	now := t0.Add(time.Hour)
	if got, want := used(t, tr, refOf(b), now), gpuMinutes(2*10+1*50); got != want {
		t.Fatalf("used %d, want %d (2 devices for 10 minutes, then 1 for 50)", got, want)
	}
	if got, want := used(t, tr, refOf(b), t0.Add(5*time.Minute)), gpuMinutes(2*5); got != want {
		t.Errorf("used at 5 minutes %d, want %d", got, want)
	}
}

// TestNodeRewrites: a node that rewrites startedAt later, or writes a
// finishedAt earlier than this replica saw the pod running, shortens the
// run by at most the clock tolerance.
func TestNodeRewrites(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "10")
	tr.UpsertBudget(b)
	p := gpuPod("ml", "p", 1, t0)
	tr.UpsertPod(running(p, t0))
	clk.SetTime(t0.Add(30 * time.Minute))
	tr.UpsertPod(running(p, t0.Add(25*time.Minute))) // startedAt rewritten later: ignored
	clk.SetTime(t0.Add(time.Hour))
	tr.UpsertPod(finished(p, t0.Add(25*time.Minute), t0.Add(26*time.Minute))) // finishedAt before it was seen running
	// It ran from t0 (the earliest startedAt seen) to at least 1h - 1m:
	// its last object said running until the terminal one came at 1h
	// (seen running until then, less the tolerance).
	if got, want := used(t, tr, refOf(b), t0.Add(2*time.Hour)), gpuMinutes(59); got != want {
		t.Fatalf("used %d, want %d: the node's rewrites shortened the run", got, want)
	}
}

// TestCalendarRolloverDST: a Daily window in Europe/Berlin across the
// spring change (a 23-hour day): the folded burn of the old day is not
// carried into the new one, a pod running across midnight burns its part
// before it in the old day and the rest in the new one.
func TestCalendarRolloverDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	start := time.Date(2027, 3, 27, 21, 0, 0, 0, berlin) // Saturday 21:00 CET
	clk := clocktesting.NewFakeClock(start)
	tr := newTracker(clk)
	b := gb("ml", "day", gpuadmitv1.BudgetWindow{Calendar: gpuadmitv1.WindowDaily, TimeZone: "Europe/Berlin"}, "100")
	api := fakeAPI(t, b)
	tr.UpsertBudget(b)
	cp := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r1", Interval: time.Minute, Clock: clk})
	a, across := gpuPod("ml", "a", 1, start), gpuPod("ml", "b", 1, start)
	tr.UpsertPod(running(a, start))
	tr.UpsertPod(running(across, start))
	clk.SetTime(start.Add(time.Hour))
	tr.DeletePod(running(a, start)) // a ran one hour, all of it on Saturday
	clk.SetTime(start.Add(90 * time.Minute))
	cp.CheckpointAll(t.Context())
	if got, _ := statusUsed(t, api, b); got != gpuMinutes(60+90) {
		t.Fatalf("Saturday: used %d, want %d", got, gpuMinutes(150))
	}
	noon := time.Date(2027, 3, 28, 12, 0, 0, 0, berlin)
	clk.SetTime(noon)
	cp.CheckpointAll(t.Context())
	got, obj := statusUsed(t, api, b)
	if want := gpuMinutes(11 * 60); got != want { // midnight CET to noon CEST: 11 hours
		t.Fatalf("Sunday noon: used %d, want %d (Saturday's folded burn carried over?)", got, want)
	}
	if d := obj.Status.WindowEnd.Sub(obj.Status.WindowStart.Time); d != 23*time.Hour {
		t.Errorf("the spring day lasts %v, want 23h", d)
	}
	if c := obj.Status.Checkpoint; c == nil || len(c.Folded) == 0 || c.Folded[0].Resource != "nvidia.com/gpu" ||
		c.Folded[0].UnitMilliseconds != int64(gpuMinutes(11*60)) {
		t.Errorf("the new day's checkpoint folds %+v, want b's 11 hours of Sunday only", obj.Status.Checkpoint)
	}
}

// TestRollingBuckets: a rolling window's folded burn ages out bucket by
// bucket; a bucket overlapping the window's start counts whole, so the
// use is never under the recount and over it by at most one bucket.
func TestRollingBuckets(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk) // 4 buckets
	b := gb("ml", "roll", rolling(4*time.Hour), "100")
	api := fakeAPI(t, b)
	tr.UpsertBudget(b)
	cp := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r1", Interval: time.Minute, Clock: clk})
	p := gpuPod("ml", "p", 1, t0)
	tr.UpsertPod(running(p, t0))
	clk.SetTime(t0.Add(2 * time.Hour))
	tr.DeletePod(running(p, t0))
	cp.CheckpointAll(t.Context())
	runs := []run{{gpus: 1, start: t0, end: t0.Add(2 * time.Hour)}}
	for _, h := range []float64{2, 3, 4.5, 5, 5.5, 6, 7} {
		now := t0.Add(time.Duration(h * float64(time.Hour)))
		clk.SetTime(now)
		cp.CheckpointAll(t.Context())
		tr.UpsertBudget(reread(t, api, b))
		want := recount(runs, now.Add(-4*time.Hour), now)
		got := used(t, tr, refOf(b), now)
		if got < want || got > want+gpuMinutes(60) {
			t.Errorf("at %vh: used %d, want within [%d, %d]", h, got, want, want+gpuMinutes(60))
		}
	}
}

// TestDeletedFoldedOnce: a pod deleted between checkpoints is folded once:
// checkpoints after it, and a lagging list still showing it, add nothing.
func TestDeletedFoldedOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "10")
	api := fakeAPI(t, b)
	tr.UpsertBudget(b)
	cp := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r1", Interval: time.Minute, Clock: clk})
	p := running(gpuPod("ml", "p", 1, t0), t0)
	tr.UpsertPod(p)
	clk.SetTime(t0.Add(time.Minute))
	cp.CheckpointAll(t.Context())
	clk.SetTime(t0.Add(90 * time.Second))
	tr.DeletePod(p)
	for i := range 4 {
		clk.SetTime(t0.Add(time.Duration(2+i) * time.Minute))
		cp.CheckpointAll(t.Context())
		tr.UpsertBudget(reread(t, api, b))
		tr.ReplacePods([]metav1.Object{p}) // a lagging list still showing it running
		if got, want := used(t, tr, refOf(b), clk.Now()), gpuMinutes(1.5); got != want {
			t.Fatalf("checkpoint %d: tracker's use %d, want %d", i, got, want)
		}
		if got, _ := statusUsed(t, api, b); got != gpuMinutes(1.5) {
			t.Fatalf("checkpoint %d: status use %d, want %d", i, got, gpuMinutes(1.5))
		}
	}
	// A fresh replica whose list still shows the pod counts it only from
	// the end of what the checkpoint folded.
	fresh := newTracker(clk)
	fresh.UpsertBudget(reread(t, api, b))
	fresh.UpsertPod(p)
	if got, want := used(t, fresh, refOf(b), clk.Now()), gpuMinutes(1.5)+burn.Amount(clk.Since(t0.Add(90*time.Second)).Milliseconds()); got != want {
		t.Errorf("fresh replica with a lagging list: used %d, want %d (folded once, counted from until)", got, want)
	}
}

func reread(t *testing.T, api interface{}, b *gpuadmitv1.GPUBudget) *gpuadmitv1.GPUBudget {
	t.Helper()
	_, obj := statusUsed(t, api.(apiClient), b)
	return obj
}
