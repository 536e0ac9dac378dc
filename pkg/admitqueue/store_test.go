package admitqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestAdmitCommitsBeforeAllowed: an admission creates the namespace's
// object and writes the reservation; the decision sees the reservations
// already written (by any replica) and nothing is written when it denies.
func TestAdmitCommitsBeforeAllowed(t *testing.T) {
	c := fakeClient(t)
	a, la, _, _ := newStore(t, c, "a")
	b, lb, _, _ := newStore(t, c, "b")
	decideFits := func(l *ledger.Ledger, limit int64) decideFn {
		return func(req decision.Request) (verdict, error) {
			s := l.Namespace("ns", req.Reservations)
			return verdict{Reserve: s.Used.Of("nvidia").MemMiB+s.Reserved.Of("nvidia").MemMiB+8192 <= limit, Demand: vec(1, 8192)}, nil
		}
	}
	ctx := context.Background()
	for i, st := range []*Store{a, b, a} {
		l := map[*Store]*ledger.Ledger{a: la, b: lb}[st]
		if err := admitPod(ctx, st, "ns", types.UID(strconv.Itoa(i)), "p"+strconv.Itoa(i), decideFits(l, 24576)); err != nil {
			t.Fatalf("admission %d: %v", i, err)
		}
	}
	if u := usage(t, c, "ns"); len(u.Status.Reservations) != 3 || u.Status.ReservationCount != 3 {
		t.Fatalf("after three admissions from two replicas: %+v", u.Status)
	}
	// The quota is full: a fourth decision sees three reservations and denies; nothing is written.
	var saw int64
	err := admitPod(ctx, b, "ns", "3", "p3", func(req decision.Request) (verdict, error) {
		saw = lb.Namespace("ns", req.Reservations).Reserved.Of("nvidia").MemMiB
		return verdict{Reserve: false, Demand: vec(1, 8192)}, nil
	})
	if err != nil || saw != 3*8192 || len(usage(t, c, "ns").Status.Reservations) != 3 {
		t.Fatalf("denial: err %v, saw %d MiB reserved, want 24576 and nothing written", err, saw)
	}
}

// TestAdmitRetriesOnConflict: a write refused for a stale resourceVersion
// (another replica wrote first: the object changed) re-reads the object
// and decides again; a review whose context ends gives up with an error,
// never "allowed".
func TestAdmitRetriesOnConflict(t *testing.T) {
	inject := &atomic.Int64{}
	inject.Store(2)
	base := fakeClient(t, &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName}})
	c := interceptor.NewClient(base, interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if inject.Add(-1) >= 0 {
			rewrite(t, base, gpuadmitv1.LastWrite{Writer: "b", Cause: gpuadmitv1.WriteTidy}) // the write that came first
			return apierrors.NewConflict(gpuadmitv1.GroupVersion().WithResource(gpuadmitv1.ReservationSetResource).GroupResource(), gpuadmitv1.ObjectName, errors.New("stale"))
		}
		return cl.SubResource(sub).Update(ctx, obj, opts...)
	}})
	s, _, _, _ := newStore(t, c, "a")
	decisions := 0
	err := admitPod(context.Background(), s, "ns", "u", "p", func(req decision.Request) (verdict, error) {
		decisions++
		return verdict{Reserve: true, Demand: vec(1, 1)}, nil
	})
	if err != nil || decisions != 3 || metrics(s).conflicts.Load() != 2 || len(usage(t, base, "ns").Status.Reservations) != 1 {
		t.Fatalf("err %v, %d decisions, %d conflicts", err, decisions, metrics(s).conflicts.Load())
	}
	inject.Store(1 << 30)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = admitPod(ctx, s, "ns", "v", "q", func(req decision.Request) (verdict, error) { return verdict{Reserve: true, Demand: vec(1, 1)}, nil })
	if err == nil || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("endless conflicts: %v, want an error", err)
	}
}

// TestMalformedObjectFailsClosed: an object edited by hand into something
// the schema let through is refused for its namespace, with its name.
func TestMalformedObjectFailsClosed(t *testing.T) {
	u := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName},
		Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{{PodUID: "x"}, {PodUID: "x"}}}}
	s, _, _, _ := newStore(t, fakeClient(t, u), "a")
	err := admitPod(context.Background(), s, "ns", "u", "p", func(req decision.Request) (verdict, error) { return verdict{Reserve: true, Demand: vec(1, 1)}, nil })
	if err == nil || !strings.Contains(err.Error(), "GPUReservationSet ns/usage: pod x is reserved twice") {
		t.Fatalf("malformed object: %v", err)
	}
}

// TestCaughtUp: a replica whose pod watch is behind the point up to which
// other replicas removed reservations does not decide until it caught up.
func TestCaughtUp(t *testing.T) {
	u := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName},
		Status: gpuadmitv1.GPUReservationSetStatus{RemovedResourceVersion: "50"}}
	s, _, w, _ := newStore(t, fakeClient(t, u), "a")
	w.rv.Store(40)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	decided := false
	err := admitPod(ctx, s, "ns", "u", "p", func(req decision.Request) (verdict, error) {
		decided = true
		return verdict{Reserve: true, Demand: vec(1, 1)}, nil
	})
	if err == nil || decided || !strings.Contains(err.Error(), "is behind the reservations other replicas removed") {
		t.Fatalf("behind: err %v, decided %v", err, decided)
	}
	w.waiting = make(chan struct{}, 1)
	go func() { <-w.waiting; w.rv.Store(60) }() // the watch catches up while the review waits
	if err := admitPod(context.Background(), s, "ns", "u", "p", func(req decision.Request) (verdict, error) { return verdict{Reserve: true, Demand: vec(1, 1)}, nil }); err != nil {
		t.Fatalf("caught up: %v", err)
	}
}

// TestClean: a reservation whose pod this replica recorded is marked with
// the pod's resourceVersion and removed once every live replica's watch
// passed it (and the watermark moves); one nobody recorded is removed when
// a read confirms its pod does not exist, never because time passed.
func TestClean(t *testing.T) {
	gone := gpuadmitv1.Reservation{PodUID: "gone", PodName: "gone", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 100}}
	exists := gpuadmitv1.Reservation{PodUID: "exists", PodName: "exists", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 100}}
	recorded := gpuadmitv1.Reservation{PodUID: "rec", PodName: "rec", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 100}}
	u := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName},
		Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{gone, exists, recorded}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "exists", UID: "exists"}}
	c := fakeClient(t, u, pod)
	s, l, w, clk := newStore(t, c, "a")
	l.UpsertPod(testpod.New("rec").NS("ns").UID("rec").RV("70").App("c", testpod.GPU(1), testpod.Mem(100)).Build())
	w.rv.Store(70)
	members(s).set("b", "60") // behind rec: it is marked, not removed
	ctx := context.Background()
	s.Clean(ctx) // first sight: rec marked; nothing due yet
	st := usage(t, c, "ns").Status
	if len(st.Reservations) != 3 || st.Reservations[2].RecordedResourceVersion != "70" {
		t.Fatalf("after the first round: %+v", st.Reservations)
	}
	// The other live replica is still at 60: rec stays.
	clk.SetTime(clk.Now().Add(time.Hour)) // a long time: nothing lapses on its own
	s.Clean(ctx)
	st = usage(t, c, "ns").Status
	if len(st.Reservations) != 2 || st.Reservations[0].PodUID != "exists" || st.Reservations[1].PodUID != "rec" {
		t.Fatalf("after an hour: %+v; want gone removed (absent), exists and rec kept", st.Reservations)
	}
	members(s).set("b", "75")
	s.Clean(ctx)
	st = usage(t, c, "ns").Status
	if len(st.Reservations) != 1 || st.Reservations[0].PodUID != "exists" || st.RemovedResourceVersion != "70" {
		t.Fatalf("every replica passed 70: %+v", st)
	}
}

// TestDeletedObjectIsRepaired: an object deleted by hand while it held
// reservations does not lose them: the next decision still counts them and
// its write brings them back; without an admission, the cleaner's round
// recreates the object; an object another replica recreated meanwhile gets
// them merged in.
func TestDeletedObjectIsRepaired(t *testing.T) {
	held := []gpuadmitv1.Reservation{
		{PodUID: "r1", PodName: "r1", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 1000}},
		{PodUID: "r2", PodName: "r2", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 2000}}}
	obj := func() *gpuadmitv1.GPUReservationSet {
		return &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName},
			Status: gpuadmitv1.GPUReservationSetStatus{Reservations: held, ReservationCount: 2, RemovedResourceVersion: "5"}}
	}
	ctx := context.Background()
	deleteIt := func(c client.Client, s *Store) {
		t.Helper()
		u := usage(t, c, "ns")
		if err := c.Delete(ctx, u); err != nil {
			t.Fatal(err)
		}
		s.Deleted(toolscache.DeletedFinalStateUnknown{Key: "ns/usage", Obj: u})
	}
	uids := func(u *gpuadmitv1.GPUReservationSet) string {
		var out []string
		for _, r := range u.Status.Reservations {
			out = append(out, string(r.PodUID))
		}
		return strings.Join(out, ",")
	}

	c := fakeClient(t, obj())
	s, l, w, _ := newStore(t, c, "a")
	w.rv.Store(10) // past removedResourceVersion 5
	deleteIt(c, s)
	var saw int64
	if err := admitPod(ctx, s, "ns", "new", "new", func(req decision.Request) (verdict, error) {
		saw = l.Namespace("ns", req.Reservations).Reserved.Of("nvidia").MemMiB
		return verdict{Reserve: true, Demand: vec(1, 500)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, c, "ns"); saw != 3000 || uids(u) != "r1,r2,new" || u.Status.RemovedResourceVersion != "5" {
		t.Fatalf("admission after the delete saw %d MiB reserved (want 3000) and wrote %s %+v", saw, uids(u), u.Status)
	}

	c = fakeClient(t, obj())
	s, _, w, _ = newStore(t, c, "a")
	w.rv.Store(10)
	deleteIt(c, s)
	s.Clean(ctx)
	if u := usage(t, c, "ns"); uids(u) != "r1,r2" || u.Status.ReservationCount != 2 {
		t.Fatalf("the cleaner's round recreated %s", uids(u))
	}

	c = fakeClient(t, obj())
	s, _, w, _ = newStore(t, c, "a")
	w.rv.Store(10)
	deleteIt(c, s)
	other, _, ow, _ := newStore(t, c, "b") // never saw the object
	ow.rv.Store(10)
	if err := admitPod(ctx, other, "ns", "b1", "b1", func(req decision.Request) (verdict, error) { return verdict{Reserve: true, Demand: vec(1, 1)}, nil }); err != nil {
		t.Fatal(err)
	}
	s.Clean(ctx)
	if u := usage(t, c, "ns"); uids(u) != "b1,r1,r2" {
		t.Fatalf("merged into the object another replica recreated: %s", uids(u))
	}
	s.Clean(ctx) // nothing left to repair: no write
	if ns := s.lost.namespaces(); len(ns) != 0 {
		t.Fatalf("kept reservations not forgotten after the repair: %v", ns)
	}
}

// TestConcurrentAdmissionsAreGroupedAndExact: 100 reviews at once, half
// through each of two replicas sharing one API server (no write completes
// before every review was sent), their cleaners running all along, against a limit that fits 20: exactly
// 20 reserved, and each replica
// needed far fewer writes than reviews (queued reviews are decided in
// order and written together).
func TestConcurrentAdmissionsAreGroupedAndExact(t *testing.T) {
	var writes, sent atomic.Int64
	allSent := make(chan struct{}) // closed once every review was sent
	base := fakeClient(t)
	c := interceptor.NewClient(base, interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		writes.Add(1)
		select { // the first writes are in flight while the reviews arrive
		case <-allSent:
		case <-ctx.Done():
			return ctx.Err()
		}
		return cl.SubResource(sub).Update(ctx, obj, opts...)
	}})
	const limit = 20 * 1024
	type replica struct {
		s *Store
		l *ledger.Ledger
	}
	var rs []replica
	for _, name := range []string{"a", "b"} {
		s, l, _, _ := newStore(t, c, name)
		rs = append(rs, replica{s, l})
	}
	var admitted, denied atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, r := range rs { // the cleaners run all along, through the same queues
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					r.s.Clean(t.Context())
				}
			}
		})
	}
	var reviews sync.WaitGroup
	for i := range 100 {
		r := rs[i%2]
		reviews.Go(func() {
			if sent.Add(1) == 100 {
				close(allSent)
			}
			ok := false
			err := admitPod(t.Context(), r.s, "ns", types.UID(fmt.Sprintf("u%03d", i)), fmt.Sprintf("p%03d", i), func(req decision.Request) (verdict, error) {
				snap := r.l.Namespace("ns", req.Reservations)
				ok = snap.Used.Of("nvidia").MemMiB+snap.Reserved.Of("nvidia").MemMiB+1024 <= limit
				return verdict{Reserve: ok, Demand: vec(1, 1024)}, nil
			})
			switch {
			case err != nil:
				t.Error(err)
			case ok:
				admitted.Add(1)
			default:
				denied.Add(1)
			}
		})
	}
	reviews.Wait()
	close(stop)
	wg.Wait()
	held := usage(t, base, "ns").Status.Reservations
	t.Logf("%d admitted, %d denied, %d reservations held, %d writes (conflicting ones included)", admitted.Load(), denied.Load(), len(held), writes.Load())
	if admitted.Load() != 20 || len(held) != 20 {
		t.Fatalf("want exactly 20 admitted and held")
	}
	if writes.Load() >= 100 {
		t.Errorf("%d writes for 100 reviews: nothing was grouped", writes.Load())
	}
}

// TestQueuedReviewHonoursItsDeadline: a review queued behind a slow write
// in its namespace gives up when its context ends, with an error (never
// nil), and its decide never runs.
func TestQueuedReviewHonoursItsDeadline(t *testing.T) {
	release, inFlight := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c := interceptor.NewClient(fakeClient(t), interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		once.Do(func() { close(inFlight) })
		<-release
		return cl.SubResource(sub).Update(ctx, obj, opts...)
	}})
	s, _, _, clk := newStore(t, c, "a")
	first := make(chan error, 1)
	go func() {
		first <- admitPod(context.Background(), s, "ns", "u1", "p1", func(req decision.Request) (verdict, error) { return verdict{Reserve: true, Demand: vec(1, 1)}, nil })
	}()
	<-inFlight // the first review's write is in flight
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var decided atomic.Bool
	second := make(chan error, 1)
	go func() {
		second <- admitPod(ctx, s, "ns", "u2", "p2", func(req decision.Request) (verdict, error) {
			decided.Store(true)
			return verdict{Reserve: true, Demand: vec(1, 1)}, nil
		})
	}()
	<-ctx.Done()
	var err error
	for answered := false; !answered; {
		select {
		case err = <-second:
			answered = true
		case <-time.After(time.Millisecond):
			clk.Step(answerGrace) // the grace after its deadline passes on the store's clock
		}
	}
	close(release)
	if err == nil || decided.Load() || !strings.Contains(err.Error(), "waiting for the earlier decisions in namespace ns") {
		t.Fatalf("queued review: err %v, decided %v", err, decided.Load())
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
