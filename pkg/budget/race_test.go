package budget

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestConcurrentUse: the feed, admission and the checkpointer use a
// tracker at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "10")
	api := fakeAPI(t, b)
	tr.UpsertBudget(b)
	cp := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r", Clock: clk})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			p := running(gpuPod("ml", fmt.Sprint("p", i), 1, t0), t0)
			tr.UpsertPod(p)
			if i%3 == 0 {
				tr.DeletePod(p)
			}
			tr.UpsertNamespace(&corev1.Namespace{})
		}
	})
	wg.Go(func() {
		for range 200 {
			tr.Standings("ml", t0.Add(time.Hour))
			tr.PodBurns("ml", t0.Add(time.Hour))
		}
	})
	for range 20 { // the checkpointer, on the test's goroutine
		cp.CheckpointAll(t.Context())
		tr.UpsertBudget(reread(t, api, b))
	}
	wg.Wait()
}
