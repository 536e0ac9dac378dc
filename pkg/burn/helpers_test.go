package burn_test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// t0 is the tests' epoch.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// keys of the nvidia family.
var (
	gpuKey = burn.Key{Family: effective.NvidiaName, Dimension: effective.DimensionCount}
	memKey = burn.Key{Family: effective.NvidiaName, Dimension: effective.DimensionMemory}
)

// hours is n resource-hours as an Amount.
func hours(n float64) burn.Amount { return burn.Amount(n * burn.MillisPerHour) }

// chargeOf is the ledger's charge of pod at a stage: its demand from the
// stage's first still-counting init container (effective.TargetOf's rule).
func chargeOf(pod *corev1.Pod) func(effective.Stage) effective.Usage {
	d, err := effective.ComputeAll(pod, []effective.Family{effective.Nvidia()}, nil)
	if err != nil {
		panic(err)
	}
	return func(st effective.Stage) effective.Usage {
		if st.State == effective.StateZero {
			return nil
		}
		u, err := d.From(st.From)
		if err != nil {
			panic(err)
		}
		return u
	}
}

// ledgerCharge is what the ledger charges pod as its status stands.
func ledgerCharge(pod *corev1.Pod) effective.Usage {
	d, err := effective.ComputeAll(pod, []effective.Family{effective.Nvidia()}, nil)
	if err != nil {
		panic(err)
	}
	tg, err := effective.TargetOf(pod, d, nil)
	if err != nil {
		panic(err)
	}
	return tg.Namespace
}

// run is one container's run: started, and finished with code (zero
// finish: still running).
type run struct {
	name            string
	init            bool
	started, finish time.Time
	code            int32
}

// withRuns writes the runs into pod's status as a kubelet would, and the
// phase: Succeeded when every app container finished 0, Failed when one
// failed, Running when one runs, else Pending.
func withRuns(pod *corev1.Pod, runs ...run) *corev1.Pod {
	p := pod.DeepCopy()
	p.Status.InitContainerStatuses, p.Status.ContainerStatuses = nil, nil
	apps, done, failed, running := 0, 0, false, false
	for _, r := range runs {
		st := corev1.ContainerStatus{Name: r.name}
		if r.finish.IsZero() {
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(r.started)}
		} else {
			st.State.Terminated = &corev1.ContainerStateTerminated{
				StartedAt: metav1.NewTime(r.started), FinishedAt: metav1.NewTime(r.finish), ExitCode: r.code}
		}
		if r.init {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, st)
			continue
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
		apps++
		switch {
		case r.finish.IsZero():
			running = true
		case r.code != 0:
			failed = true
		default:
			done++
		}
	}
	switch {
	case failed:
		p.Status.Phase = corev1.PodFailed
	case apps > 0 && done == len(p.Spec.Containers):
		p.Status.Phase = corev1.PodSucceeded
	case running:
		p.Status.Phase = corev1.PodRunning
	default:
		p.Status.Phase = corev1.PodPending
	}
	return p
}

// issuePod is the issue's example: an init container of 20 GiB then an
// app of 10 GiB, one GPU each, created at t0.
func issuePod() *corev1.Pod {
	p := testpod.New("train").NS("ml").
		Init("fetch", testpod.GPU(1), testpod.Mem(20480)).
		App("train", testpod.GPU(1), testpod.Mem(10240)).Build()
	p.CreationTimestamp = metav1.NewTime(t0)
	return p
}
