package admitqueue

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// TestRecordedRemovedWithoutMark: a reservation whose pod this replica
// recorded is removed in the very write that would have marked it once
// every live replica's watch passed the pod, and only then: while one is
// behind, or has published no progress, it is only marked and still
// counted.
func TestRecordedRemovedWithoutMark(t *testing.T) {
	res := func(uid string) gpuadmitv1.Reservation {
		return gpuadmitv1.Reservation{PodUID: types.UID(uid), PodName: uid, Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 100}}
	}
	u := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName},
		Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{res("early"), res("late")}}}
	c := fakeClient(t, u)
	s, l, w, _ := newStore(t, c, "a")
	l.UpsertPod(testpod.New("early").NS("ns").UID("early").RV("70").App("c", testpod.GPU(1), testpod.Mem(100)).Build())
	l.UpsertPod(testpod.New("late").NS("ns").UID("late").RV("90").App("c", testpod.GPU(1), testpod.Mem(100)).Build())
	w.rv.Store(95)
	members(s).set("b", "") // published nothing yet: nothing may be removed
	s.Clean(t.Context())
	st := usage(t, c, "ns").Status
	if len(st.Reservations) != 2 || st.Reservations[0].RecordedResourceVersion != "70" || st.Reservations[1].RecordedResourceVersion != "90" || st.RemovedResourceVersion != "" {
		t.Fatalf("with a replica that published no progress: %+v; want both marked, none removed", st)
	}
	if n := len(reservation.Countable(st, "60")); n != 2 {
		t.Fatalf("a replica whose watch is at 60 counts %d reservations, want 2", n)
	}
	// Direct removal: fresh reservations, b passed the first pod only.
	u = usage(t, c, "ns")
	u.Status = gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{res("early"), res("late")}}
	if err := c.Status().Update(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	members(s).set("b", "80")
	before := metrics(s).writes.Load()
	s.Clean(t.Context())
	st = usage(t, c, "ns").Status
	if len(st.Reservations) != 1 || st.Reservations[0].PodUID != "late" || st.Reservations[0].RecordedResourceVersion != "90" || st.RemovedResourceVersion != "70" {
		t.Fatalf("b at 80: %+v; want early removed at once (watermark 70), late marked", st)
	}
	if n := metrics(s).writes.Load() - before; n != 1 {
		t.Errorf("%d writes, want 1 (removed with the write that marks the other)", n)
	}
	if got := metrics(s).list(&metrics(s).ended); got != "recorded" {
		t.Errorf("ended %q, want one recorded", got)
	}
}

// TestChangedHurriesOnlyForRecordedPods: the informer's delivery of an
// object hurries this replica's progress Lease only when the object holds
// a reservation of a pod this replica's watch recorded (its removal waits
// for that progress), not for one it has not seen or a claim's.
func TestChangedHurriesOnlyForRecordedPods(t *testing.T) {
	s, l, _, _ := newStore(t, fakeClient(t), "a")
	l.UpsertPod(testpod.New("seen").NS("ns").UID("seen").RV("70").App("c", testpod.GPU(1), testpod.Mem(100)).Build())
	obj := func(rs ...gpuadmitv1.Reservation) *gpuadmitv1.GPUReservationSet {
		return &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName},
			Status: gpuadmitv1.GPUReservationSetStatus{Reservations: rs}}
	}
	s.Changed(obj())
	s.Changed(obj(gpuadmitv1.Reservation{PodUID: "unseen", PodName: "unseen"}))
	s.Changed(obj(gpuadmitv1.Reservation{PodUID: "seen", ClaimName: "claim"}))
	if n := members(s).hurried.Load(); n != 0 {
		t.Fatalf("hurried %d times without a recorded pod's reservation", n)
	}
	s.Changed(obj(gpuadmitv1.Reservation{PodUID: "unseen", PodName: "unseen"}, gpuadmitv1.Reservation{PodUID: "seen", PodName: "seen"}))
	if n := members(s).hurried.Load(); n != 1 {
		t.Fatalf("hurried %d times, want 1", n)
	}
}

// TestRemovalRacesAdmissionsExactly: two replicas admit into one
// namespace while every admitted pod is created and recorded by both
// watches (b's behind a's), each replica learning the other's progress
// only after that watch applied it, and both cleaners removing what they
// may all along: never more admitted than the limit fits, and exactly as
// many as fit.
func TestRemovalRacesAdmissionsExactly(t *testing.T) {
	c := fakeClient(t)
	const fits = 20
	type replica struct {
		s *Store
		l *ledger.Ledger
		w *fakeWatch
	}
	var rs []*replica
	for _, name := range []string{"a", "b"} {
		s, l, w, _ := newStore(t, c, name)
		rs = append(rs, &replica{s, l, w})
	}
	members(rs[0].s).set("b", "1")
	members(rs[1].s).set("a", "1")
	var mu sync.Mutex
	var created []string // the admitted pods' UIDs in creation order (resourceVersion 100+i)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i, r := range rs {
		other := rs[1-i]
		wg.Go(func() { // r's pod watch: applies the pods in order, b one step behind a
			applied := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				upTo := len(created) - i
				batch := append([]string(nil), created[min(applied, max(upTo, 0)):max(upTo, 0)]...)
				mu.Unlock()
				for _, uid := range batch {
					rv := strconv.Itoa(100 + applied)
					r.l.UpsertPod(testpod.New(uid).NS("ns").UID(uid).RV(rv).App("c", testpod.GPU(1), testpod.Mem(1024)).Build())
					applied++
					r.w.rv.Store(uint64(100 + applied - 1))
					members(other.s).set(r.s.opts.Replica, r.w.PodsResourceVersion()) // published after it applied
				}
				r.s.Clean(context.Background())
			}
		})
	}
	var admitted atomic.Int64
	var reviews sync.WaitGroup
	for i := range 60 {
		r := rs[i%2]
		reviews.Go(func() {
			uid := fmt.Sprintf("u%03d", i)
			ok := false
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err := admitPod(ctx, r.s, "ns", types.UID(uid), uid, func(req decision.Request) (verdict, error) {
				snap := r.l.Namespace("ns", req.Reservations)
				ok = snap.Used.Of("nvidia").MemMiB+snap.Reserved.Of("nvidia").MemMiB+1024 <= fits*1024
				return verdict{Reserve: ok, Demand: vec(1, 1024)}, nil
			})
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				admitted.Add(1)
				mu.Lock()
				created = append(created, uid) // the API server creates the pod after the answer
				mu.Unlock()
			}
		})
	}
	reviews.Wait()
	close(stop)
	wg.Wait()
	if n := admitted.Load(); n != fits {
		t.Fatalf("%d admitted, want exactly %d", n, fits)
	}
}
