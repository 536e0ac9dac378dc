package budget

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// TestStandingsMemoEqualsSum: admission's standings (memoized between
// events: O(1) per budget) equal the sum over the pods at every moment,
// across init containers finishing, pods ending and deletions, the hour
// of the burn rate, a month's end, and queries between events.
func TestStandingsMemoEqualsSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	clk := clocktesting.NewFakeClock(t0.Add(-3 * time.Hour))
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "10")
	tr.UpsertBudget(b)
	var pods []*corev1.Pod
	for step := range 300 {
		clk.Step(time.Duration(rng.IntN(600_000)+1) * time.Millisecond)
		now := clk.Now()
		switch rng.IntN(6) {
		case 0:
			p := testpod.New(fmt.Sprint("p", step)).NS("ml").Init("fetch", testpod.GPU(2)).App("main", testpod.GPU(1)).Build()
			p.CreationTimestamp = metav1.NewTime(now)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}}
			pods = append(pods, p)
			tr.UpsertPod(p)
		case 1:
			if len(pods) > 0 {
				p := pods[rng.IntN(len(pods))]
				if len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Running != nil {
					started := p.Status.InitContainerStatuses[0].State.Running.StartedAt
					q := running(p, now)
					q.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch", State: corev1.ContainerState{
						Terminated: &corev1.ContainerStateTerminated{StartedAt: started, FinishedAt: metav1.NewTime(now)}}}}
					*p = *q
					tr.UpsertPod(p)
				}
			}
		case 2:
			if len(pods) > 0 {
				tr.DeletePod(pods[rng.IntN(len(pods))])
			}
		}
		for range 3 { // queries between events
			at := now.Add(time.Duration(rng.IntN(3_600_000)) * time.Millisecond)
			fast := tr.Standings("ml", at)[0].Resources[0]
			slow := tr.All(at)[0].Resources[0]
			if fast != slow {
				t.Fatalf("step %d at %v: memoized %+v, summed %+v", step, at, fast, slow)
			}
		}
	}
}
