package budget

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// TestLeaderKilledBetweenCheckpoints: the leader dies between checkpoints
// after seeing a pod deleted; a new replica (a fresh Tracker, whose list
// no longer shows that pod) resumes from the status: its use is never
// above the recount from the pods' own timestamps, and under it by at
// most one checkpoint interval of that pod's burn.
func TestLeaderKilledBetweenCheckpoints(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	a := newTracker(clk)
	b := gb("ml", "hours", monthly(), "100")
	api := fakeAPI(t, b)
	a.UpsertBudget(b)
	cpA := NewCheckpointer(CheckpointerOptions{Tracker: a, Client: api, Identity: "a", Interval: time.Minute, Clock: clk})
	p1 := running(gpuPod("ml", "p1", 1, t0), t0)
	p2 := running(gpuPod("ml", "p2", 2, t0), t0.Add(2*time.Minute))
	a.UpsertPod(p1)
	for m := 1; m <= 10; m++ {
		clk.SetTime(t0.Add(time.Duration(m) * time.Minute))
		if m == 2 {
			a.UpsertPod(p2)
		}
		cpA.CheckpointAll(t.Context())
		a.UpsertBudget(reread(t, api, b))
	}
	clk.SetTime(t0.Add(10*time.Minute + 20*time.Second))
	a.DeletePod(p2) // seen by the leader only, which dies before its next checkpoint
	clk.SetTime(t0.Add(11 * time.Minute))
	fresh := newTracker(clk)
	fresh.UpsertBudget(reread(t, api, b))
	fresh.ReplacePods([]metav1.Object{p1})
	cpB := NewCheckpointer(CheckpointerOptions{Tracker: fresh, Client: api, Identity: "b", Interval: time.Minute, Clock: clk})
	cpB.CheckpointAll(t.Context())
	runs := []run{{gpus: 1, start: t0}, {gpus: 2, start: t0.Add(2 * time.Minute), end: t0.Add(10*time.Minute + 20*time.Second)}}
	want := recount(runs, t0, clk.Now())
	got, _ := statusUsed(t, api, b)
	if got > want || want-got > burn.Amount(2*time.Minute.Milliseconds()) {
		t.Fatalf("resumed use %d, recount %d: want within one interval of p2's burn below it, never above", got, want)
	}
	if got != want-burn.Amount(2*(20*time.Second).Milliseconds()) {
		t.Errorf("resumed use %d, want the recount %d less p2's 20 s after the last checkpoint", got, want)
	}
}

// TestTwoLeaders: two replicas that both believe they lead write the same
// status in turn (compare-and-swap): the use written is never above the
// recount, and equals it (both saw every event).
func TestTwoLeaders(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := gb("ml", "hours", monthly(), "100")
	api := fakeAPI(t, b)
	trs := []*Tracker{newTracker(clk), newTracker(clk)}
	var cps []*Checkpointer
	for i, tr := range trs {
		tr.UpsertBudget(b)
		cps = append(cps, NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: fmt.Sprint(i), Interval: time.Minute, Clock: clk}))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var runs []run
	var pods []*corev1.Pod
	for step := range 120 {
		clk.Step(time.Duration(rng.IntN(90)+1) * time.Second)
		switch rng.IntN(3) {
		case 0:
			p := running(gpuPod("ml", fmt.Sprintf("p%d", step), int64(rng.IntN(3)+1), clk.Now()), clk.Now())
			pods = append(pods, p)
			runs = append(runs, run{gpus: p.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "").Value(), start: clk.Now()})
			for _, tr := range trs {
				tr.UpsertPod(p)
			}
		case 1:
			if i := rng.IntN(len(pods) + 1); i < len(pods) && runs[i].end.IsZero() {
				runs[i].end = clk.Now()
				for _, tr := range trs {
					tr.DeletePod(pods[i])
				}
			}
		}
		for _, i := range rng.Perm(2) {
			cps[i].CheckpointAll(t.Context())
			if rng.IntN(2) == 0 { // the other's informer sometimes lags
				trs[i].UpsertBudget(reread(t, api, b))
			}
			got, _ := statusUsed(t, api, b)
			want := recount(runs, t0, clk.Now())
			if got > want {
				t.Fatalf("step %d, writer %d: status use %d above the recount %d (counted twice)", step, i, got, want)
			}
			if want-got > 3600 { // the status rounds down to the milli-hour
				t.Fatalf("step %d, writer %d: status use %d, recount %d", step, i, got, want)
			}
		}
	}
}

// TestHostileStatus: a status edited by hand (negative, huge, unknown
// resources, 30000 foldedPods, a checkpoint time ahead of now) is read
// without panicking: a negative amount counts as zero, a huge one
// saturates, an unknown resource is dropped, the foldedPods read and
// written are bounded.
func TestHostileStatus(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0.Add(time.Hour))
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "100")
	b.Spec.Hard["nvidia.com/gpumem"] = b.Spec.Hard["nvidia.com/gpu"]
	ws := metav1.NewTime(t0)
	c := &gpuadmitv1.BudgetCheckpoint{Time: metav1.NewMicroTime(t0.Add(1000 * time.Hour)), WindowStart: &ws,
		Folded: []gpuadmitv1.BudgetAmount{{Resource: "nvidia.com/gpu", UnitMilliseconds: -5}, {Resource: "example.com/fpga", UnitMilliseconds: 1 << 62},
			{Resource: "nvidia.com/gpumem", UnitMilliseconds: math.MaxInt64}, {Resource: "nvidia.com/gpumem", UnitMilliseconds: math.MaxInt64}},
		Buckets: []gpuadmitv1.BudgetBucket{{Start: ws, Amounts: []gpuadmitv1.BudgetAmount{{Resource: "nvidia.com/gpu", UnitMilliseconds: -1}}}}}
	for i := range 30000 {
		c.FoldedPods = append(c.FoldedPods, gpuadmitv1.FoldedPod{UID: fmt.Sprint(i), Until: metav1.NewMicroTime(t0.Add(time.Duration(i) * time.Millisecond))})
	}
	c.FoldedPods = append(c.FoldedPods, gpuadmitv1.FoldedPod{UID: ""}, gpuadmitv1.FoldedPod{UID: "dup", Until: metav1.NewMicroTime(t0)})
	b.Status.Checkpoint = c
	api := fakeAPI(t, b)
	tr.UpsertBudget(b)
	tr.UpsertPod(running(gpuPod("ml", "p", 1, t0), t0))
	st := tr.Standings("ml", clk.Now())
	if len(st) != 1 || len(st[0].Resources) != 2 {
		t.Fatalf("standings %+v", st)
	}
	for _, r := range st[0].Resources {
		switch r.Resource {
		case "nvidia.com/gpu":
			if r.Used != gpuMinutes(60) {
				t.Errorf("gpu used %d, want the pod's hour (a negative folded counts as zero)", r.Used)
			}
		case "nvidia.com/gpumem":
			if r.Used != math.MaxInt64 {
				t.Errorf("gpumem used %d, want saturated", r.Used)
			}
		}
	}
	cp := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r", Interval: time.Minute, Clock: clk})
	cp.CheckpointAll(t.Context())
	_, obj := statusUsed(t, api, b)
	if n := len(obj.Status.Checkpoint.FoldedPods); n > MaxFoldedPods {
		t.Errorf("%d foldedPods written, want at most %d", n, MaxFoldedPods)
	}
	if !obj.Status.Checkpoint.Time.Time.Equal(clk.Now()) {
		t.Errorf("checkpoint time %v, want this replica's now %v", obj.Status.Checkpoint.Time, clk.Now())
	}
}

// TestClusterBudgetRelabel: a namespace that leaves a GPUClusterBudget
// keeps the burn of its pods up to then counted (folded by the next
// checkpoint); a pod of a namespace joining counts from then on as
// well as before (its whole burn in the window: the budget never saw it).
func TestClusterBudgetRelabel(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	cb := &gpuadmitv1.GPUClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "team", Generation: 1},
		Spec: gpuadmitv1.GPUClusterBudgetSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			Window: monthly(), Hard: corev1.ResourceList{"nvidia.com/gpu": b100()}}}
	api := fakeAPI(t, cb)
	tr.UpsertClusterBudget(cb)
	ref := Ref{Kind: KindClusterBudget, Name: "team"}
	tr.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"team": "a"}}})
	tr.UpsertPod(running(gpuPod("x", "p", 1, t0), t0))
	clk.SetTime(t0.Add(30 * time.Minute))
	tr.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"team": "b"}}})
	clk.SetTime(t0.Add(time.Hour))
	if got := used(t, tr, ref, clk.Now()); got != gpuMinutes(30) {
		t.Fatalf("after leaving: used %d, want the 30 minutes before", got)
	}
	cp := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r", Interval: time.Minute, Clock: clk})
	cp.CheckpointAll(t.Context())
	got := &gpuadmitv1.GPUClusterBudget{}
	if err := api.Get(t.Context(), clientKey("", "team"), got); err != nil {
		t.Fatal(err)
	}
	tr.UpsertClusterBudget(got)
	if u := used(t, tr, ref, clk.Now()); u != gpuMinutes(30) {
		t.Fatalf("after the checkpoint: used %d, want the 30 minutes folded", u)
	}
	clk.SetTime(t0.Add(90 * time.Minute))
	tr.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"team": "a"}}})
	if u := used(t, tr, ref, clk.Now()); u != gpuMinutes(90) {
		t.Errorf("back in: used %d, want 90 minutes (the time out counted, from the entry's until)", u)
	}
}
