package gpuusage

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// TestWorkersEndAndRestartBetweenReviews: with namespace workers that end
// almost as soon as their queue is empty, reviews arriving while a worker
// ends are never lost nor left waiting: every review is answered, exactly
// what fits the limit is admitted and held, and no worker is left once the
// reviews stop.
func TestWorkersEndAndRestartBetweenReviews(t *testing.T) {
	c := fakeClient(t)
	s, l, _, _ := newStore(t, c, "a")
	s.opts.WorkerIdle = 50 * time.Microsecond
	const fits = 30
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 150 {
		wg.Go(func() {
			time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond) // arrive around workers' ends
			ok := false
			err := admitPod(t.Context(), s, "ns", types.UID(fmt.Sprintf("u%03d", i)), fmt.Sprintf("p%03d", i), func(req decision.Request) (verdict, error) {
				snap := l.Namespace("ns", req.Reservations)
				ok = snap.Used.Of("nvidia").MemMiB+snap.Reserved.Of("nvidia").MemMiB+1024 <= fits*1024
				return verdict{Reserve: ok, Demand: vec(1, 1024)}, nil
			})
			switch {
			case err != nil:
				t.Error(err)
			case ok:
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if held := usage(t, c, "ns").Status.Reservations; admitted.Load() != fits || len(held) != fits {
		t.Fatalf("%d admitted, %d reservations held; want %d of each", admitted.Load(), len(held), fits)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.queues.mu.Lock()
		left := len(s.queues.m)
		s.queues.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d namespace workers still running after the reviews stopped", left)
		}
		time.Sleep(time.Millisecond)
	}
}
