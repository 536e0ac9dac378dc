package ledger

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// TestRaceEventsSnapshotsReservations runs pod, node and quota events,
// snapshots and reservations in parallel (run it with -race). Once every
// pod is deleted the ledger must be empty: no usage leaked in between.
func TestRaceEventsSnapshotsReservations(t *testing.T) {
	if !raceEnabled {
		t.Skip("built without -race: the data races this test exists to find go undetected; make unit-race runs it with -race")
	}
	l := New(Options{Families: []effective.Family{effective.Nvidia()}})
	const writers, podsPerWriter, rounds = 4, 20, 30
	var writing, background sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		writing.Go(func() {
			for r := range rounds {
				for i := range podsPerWriter {
					b := testpod.New(fmt.Sprintf("p%d-%d", w, i)).NS(fmt.Sprintf("ns%d", i%3)).
						Init("init", gpu(1), mem(20480)).App("app", gpu(1), pct(50)).
						Node(fmt.Sprintf("n%d", i%2)).Devices("GPU-a,NVIDIA,20480,0:;GPU-b,NVIDIA,12288,0:;")
					if r%2 == 1 {
						b.InitTerminated("init", 0).AppRunning("app")
					}
					l.UpsertPod(b.Build())
					if r == rounds-1 {
						l.DeletePod(b.Build())
					}
				}
			}
		})
	}
	nodes := []*corev1.Node{
		testnode.WithDevices("n0", nil, dev("GPU-a", 16384)), testnode.WithDevices("n1", nil, dev("GPU-a", 24576)), testnode.WithDevices("n0", nil, dev("GPU-a", 81920)),
	}
	background.Go(func() { // nodes change: percentages are re-derived under the lock
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l.UpsertNode(nodes[i%len(nodes)])
			if i%5 == 0 {
				l.DeleteNode("n1")
			}
		}
	})
	background.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l.UpsertQuota(testquota.New("ns0", fmt.Sprintf("q%d", i%2), map[string]string{"limits.nvidia.com/gpumem": fmt.Sprint(10000 + i)}))
			if i%7 == 0 {
				l.DeleteQuota("ns0", "q1")
			}
		}
	})
	background.Go(func() { // the webhook: snapshot with the namespace's reservations
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			pending := []reservation.Reservation{{UID: types.UID(fmt.Sprintf("r%d", i%50)), Name: fmt.Sprintf("p0-%d", i%20), Demand: nv(1, 1000, 0)}}
			s := l.Namespace("ns0", pending)
			if usageInvariant(s.Used) != nil || usageInvariant(s.Reserved) != nil || s.Reservations > 1 {
				t.Errorf("snapshot %+v", s)
			}
			_ = l.Capacity().MaxDeviceMemMiBFor(testpod.New("p").App("a", gpu(1)).Build())
		}
	})
	background.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = l.Snapshot(nil)
		}
	})
	writing.Wait()
	close(stop)
	background.Wait()
	st := l.Snapshot(nil).Stats
	if st.Pods != 0 || st.Reservations != 0 || st.InvalidPods != 0 {
		t.Fatalf("after deleting every pod: %+v", st)
	}
	for ns, s := range l.Snapshot(nil).Namespaces {
		if !s.Used.IsZero() {
			t.Errorf("namespace %s leaked %v", ns, s.Used)
		}
	}
	for node, n := range l.Snapshot(nil).Nodes {
		for id, d := range n.Devices {
			if !d.Used.IsZero() {
				t.Errorf("node %s device %s leaked %v", node, id, d.Used)
			}
		}
	}
}
