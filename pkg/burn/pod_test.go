package burn_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// TestPodTimelineBurnRule attacks the burn rule with the node's timestamps:
// each case's burn over the whole day is exactly the rule's, never what a
// node rewriting its timestamps would make it.
func TestPodTimelineBurnRule(t *testing.T) {
	const tol = time.Minute
	initRun := run{name: "fetch", init: true, started: at(0), finish: at(10 * time.Minute)}
	appDone := run{name: "train", started: at(10 * time.Minute), finish: at(5*time.Hour + 10*time.Minute)}
	appRunning := run{name: "train", started: at(10 * time.Minute)}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		obs      burn.Observed
		gpu, mem burn.Amount // over [t0-1d, t0+1d)
	}{
		{name: "pending pod burns nothing", pod: withRuns(issuePod())},
		{name: "pending with an init container waiting burns nothing",
			pod: withRuns(issuePod(), run{name: "fetch", init: true})},
		{name: "the issue's example: 20 GiB for 10 minutes then 10 GiB for 5 hours",
			pod: withRuns(issuePod(), initRun, appDone),
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "running pod burns until the end of the interval",
			pod: withRuns(issuePod(), initRun, appRunning),
			gpu: hours(24), mem: 20480*hours(1.0/6) + 10240*(hours(24)-hours(1.0/6))},
		{name: "a startedAt before the pod was created counts from its creation",
			pod: backdate(withRuns(issuePod(), run{name: "fetch", init: true, started: at(-3 * time.Hour), finish: at(10 * time.Minute)}, appDone)),
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "a startedAt rewritten later counts from the earliest seen",
			pod: withRuns(issuePod(), run{name: "fetch", init: true, started: at(9 * time.Minute), finish: at(10 * time.Minute)}, appDone),
			obs: burn.Observed{EarliestStart: at(0), Tolerance: tol},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "a startedAt later than the replica first saw it running counts from then",
			pod: withRuns(issuePod(), run{name: "fetch", init: true, started: at(9 * time.Minute), finish: at(10 * time.Minute)}, appDone),
			obs: burn.Observed{FirstRunning: at(0), Tolerance: tol},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "a finishedAt rewritten earlier ends at the last time seen running less the tolerance",
			pod: withRuns(issuePod(), initRun, run{name: "train", started: at(10 * time.Minute), finish: at(20 * time.Minute)}),
			obs: burn.Observed{LastRunning: at(5*time.Hour + 11*time.Minute), Tolerance: tol},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "a finishedAt within the tolerance of the last time seen running is kept",
			pod: withRuns(issuePod(), initRun, appDone),
			obs: burn.Observed{LastRunning: at(5*time.Hour + 10*time.Minute + 30*time.Second), Tolerance: tol},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "a finishedAt rewritten earlier than one seen keeps the latest seen",
			pod: withRuns(issuePod(), initRun, run{name: "train", started: at(10 * time.Minute), finish: at(20 * time.Minute)}),
			obs: burn.Observed{LatestFinish: at(5*time.Hour + 10*time.Minute), Tolerance: tol},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "finish timestamps erased: the last time seen running less the tolerance",
			pod: eraseFinish(withRuns(issuePod(), initRun, appDone)),
			obs: burn.Observed{FirstRunning: at(0), LastRunning: at(5*time.Hour + 11*time.Minute), StageSeen: map[int]time.Time{0: at(11 * time.Minute)}, Tolerance: tol},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "an init finishedAt rewritten earlier is bounded by the stage last seen",
			pod: withRuns(issuePod(), run{name: "fetch", init: true, started: at(0), finish: at(time.Second)},
				appDone),
			obs: burn.Observed{StageSeen: map[int]time.Time{0: at(11 * time.Minute)}, Tolerance: tol},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "a running pod deleted burns until the replica saw it go",
			pod: withRuns(issuePod(), initRun, appRunning),
			obs: burn.Observed{Deleted: at(5*time.Hour + 10*time.Minute)},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "a terminal pod cannot burn past its deletion",
			pod: withRuns(issuePod(), initRun, run{name: "train", started: at(10 * time.Minute), finish: at(20 * time.Hour)}),
			obs: burn.Observed{Deleted: at(5*time.Hour + 10*time.Minute)},
			gpu: hours(5) + hours(1.0/6), mem: 20480*hours(1.0/6) + 10240*hours(5)},
		{name: "an init container that failed keeps its demand (hold)",
			pod: withRuns(issuePod(), run{name: "fetch", init: true, started: at(0), finish: at(10 * time.Minute), code: 1}),
			obs: burn.Observed{Deleted: at(time.Hour)},
			gpu: hours(1), mem: 20480 * hours(1)},
		{name: "finish timestamps erased, init finish unseen: as seen running",
			pod: eraseFinish(withRuns(issuePod(), initRun, appDone)),
			obs: burn.Observed{FirstRunning: at(0), LastRunning: at(time.Hour + time.Minute), Tolerance: tol},
			gpu: hours(1), mem: 10240 * hours(1)},
		{name: "progressive: each regular init container's exit lowers the charge",
			pod: withRuns(twoInits(), run{name: "a", init: true, started: at(0), finish: at(10 * time.Minute)},
				run{name: "b", init: true, started: at(10 * time.Minute), finish: at(20 * time.Minute)},
				run{name: "train", started: at(20 * time.Minute), finish: at(80 * time.Minute)}),
			gpu: hours(80.0 / 60), mem: 30000*hours(1.0/6) + 20000*hours(1.0/6) + 10000*hours(1)},
		{name: "a terminal pod with no timestamps never seen running burns nothing",
			pod: eraseFinish(withRuns(issuePod(), initRun, appDone))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := burn.PodTimeline(tc.pod, chargeOf(tc.pod), tc.obs)
			got := tl.Between(at(-24*time.Hour), at(24*time.Hour))
			if got[gpuKey] != tc.gpu || got[memKey] != tc.mem {
				t.Errorf("burn gpu %d mem %d, want gpu %d mem %d (timeline %+v)", got[gpuKey], got[memKey], tc.gpu, tc.mem, tl)
			}
		})
	}
}

// backdate sets the pod's creation 0 but keeps the statuses: the node's
// startedAt is before the creation.
func backdate(p *corev1.Pod) *corev1.Pod {
	p.CreationTimestamp = metav1.NewTime(t0)
	return p
}

// eraseFinish drops every startedAt and finishedAt of the terminated
// containers, keeping the phase.
func eraseFinish(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if x := list[i].State.Terminated; x != nil {
				x.StartedAt, x.FinishedAt = metav1.Time{}, metav1.Time{}
			}
		}
	}
	return p
}

// twoInits has two regular init containers of 30000 and 20000 MiB before
// an app of 10000 MiB, one GPU each.
func twoInits() *corev1.Pod {
	p := testpod.New("two").NS("ml").
		Init("a", testpod.GPU(1), testpod.Mem(30000)).
		Init("b", testpod.GPU(1), testpod.Mem(20000)).
		App("train", testpod.GPU(1), testpod.Mem(10000)).Build()
	p.CreationTimestamp = metav1.NewTime(t0)
	return p
}
