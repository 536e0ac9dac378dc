package budget

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// modelPod is a pod of the model and what really happened to it.
type modelPod struct {
	pod     *corev1.Pod
	gpus    int64
	start   time.Time
	end     time.Time // finished or deleted (zero: running)
	deleted bool
}

// TestModelNeverAboveRecount drives random pods (started, finished,
// deleted), replicas killed and replaced (a fresh tracker that never saw
// what happened before it), leaders changing and informers lagging, and
// checks after every checkpoint that the status's use, and every
// replica's standing, is never above the recount from the pods' own
// timestamps, and under it by at most the burn since the last checkpoint
// of the pods deleted meanwhile (the burn a killed leader may take away).
func TestModelNeverAboveRecount(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { modelRun(t, seed) })
	}
}

func modelRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	month, err := burn.ParseWindow("Monthly", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0.Add(-30 * time.Minute))
	b := gb("ml", "hours", monthly(), "1000")
	api := fakeAPI(t, b)
	var pods []*modelPod
	fresh := func() *Tracker {
		tr := newTracker(clk)
		tr.UpsertBudget(reread(t, api, b))
		var live []metav1.Object
		for _, p := range pods {
			if !p.deleted {
				live = append(live, p.pod)
			}
		}
		tr.ReplacePods(live)
		return tr
	}
	replicas := []*Tracker{fresh(), fresh()}
	var allowance burn.Amount // what killed leaders may have lost
	lastCP := clk.Now()
	for step := range 150 {
		clk.Step(time.Duration(rng.IntN(120)+1) * time.Second)
		now := clk.Now()
		modelEvent(rng, &pods, replicas, now, lastCP, &allowance, step)
		if rng.IntN(10) == 0 { // a replica killed and replaced
			replicas[rng.IntN(2)] = fresh()
		}
		leader := replicas[rng.IntN(2)]
		NewCheckpointer(CheckpointerOptions{Tracker: leader, Client: api, Identity: "l", Interval: time.Minute, Clock: clk}).CheckpointAll(t.Context())
		lastCP = now
		for _, tr := range replicas {
			if rng.IntN(3) > 0 { // the informer sometimes lags
				tr.UpsertBudget(reread(t, api, b))
			}
		}
		var runs []run
		for _, p := range pods {
			runs = append(runs, run{gpus: p.gpus, start: p.start, end: p.end})
		}
		ws, _ := month.At(now) // the run crosses the first of the month: a rollover
		want := recount(runs, ws, now)
		got, _ := statusUsed(t, api, b)
		if got > want+3600 || got+allowance+3600 < want { // the status rounds down to the milli-hour
			t.Fatalf("step %d: status use %d, recount %d, allowance %d", step, got, want, allowance)
		}
		for i, tr := range replicas {
			if u := used(t, tr, refOf(b), now); u > want {
				t.Fatalf("step %d: replica %d's standing %d above the recount %d", step, i, u, want)
			}
		}
	}
}

// modelEvent applies one random event to every replica.
func modelEvent(rng *rand.Rand, pods *[]*modelPod, replicas []*Tracker, now, lastCP time.Time, allowance *burn.Amount, step int) {
	each := func(f func(*Tracker)) {
		for _, tr := range replicas {
			f(tr)
		}
	}
	switch n := len(*pods); rng.IntN(4) {
	case 0, 1:
		gpus := int64(rng.IntN(3) + 1)
		p := &modelPod{gpus: gpus, start: now, pod: running(gpuPod("ml", fmt.Sprint("p", step), gpus, now), now)}
		*pods = append(*pods, p)
		each(func(tr *Tracker) { tr.UpsertPod(p.pod) })
	case 2:
		if n == 0 {
			return
		}
		p := (*pods)[rng.IntN(n)]
		if p.end.IsZero() {
			p.end = now
			p.pod = finished(p.pod, p.start, now)
			each(func(tr *Tracker) { tr.UpsertPod(p.pod) })
		}
	case 3:
		if n == 0 {
			return
		}
		p := (*pods)[rng.IntN(n)]
		if p.deleted {
			return
		}
		if p.end.IsZero() {
			p.end = now
		}
		p.deleted = true
		if p.end.After(lastCP) {
			*allowance += burn.Amount(p.gpus * p.end.Sub(maxTime(lastCP, p.start)).Milliseconds())
		}
		each(func(tr *Tracker) { tr.DeletePod(p.pod) })
	}
}
