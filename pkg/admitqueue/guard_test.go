package admitqueue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// reserve admits uid/name with demand unconditionally.
func reserve(ctx context.Context, s *Store, uid, name string, demand effective.Usage) error {
	return admitPod(ctx, s, "ns", types.UID(uid), name, func(req decision.Request) (verdict, error) { return verdict{Reserve: true, Demand: demand}, nil })
}

// TestReviewNeverReplacesReservation: a second review for a reserved pod's
// UID (its name and UID are readable by anyone who may view GPUReservationSet)
// cannot shrink or move the reservation; the API server's retry of the
// very same review is allowed without a second reservation; a create review
// for the UID of a pod the ledger recorded is refused. (Found by an attack:
// six 1 GiB reservations shrunk to 1 MiB each let a lagging replica admit
// 8 more pods.)
func TestReviewNeverReplacesReservation(t *testing.T) {
	ctx := t.Context()
	c := fakeClient(t)
	s, l, _, _ := newStore(t, c, "a")
	if err := reserve(ctx, s, "u1", "p1", vec(1, 6144)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, uid, pod string
		demand         effective.Usage
		want           string // "" for allowed
	}{
		{"a smaller demand", "u1", "p1", vec(1, 1), `pod UID u1 is already reserved in GPUReservationSet ns/usage as pod "p1"`},
		{"another name", "u1", "other", vec(1, 6144), "a review never replaces a reservation"},
		{"the same review again (the API server's retry)", "u1", "p1", vec(1, 6144), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := reserve(ctx, s, tt.uid, tt.pod, tt.demand)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			rs := usage(t, c, "ns").Status.Reservations
			if len(rs) != 1 || rs[0].PodName != "p1" || rs[0].Demand.GPUMem != 6144 {
				t.Fatalf("reservations now %+v, want p1's 6144 MiB alone", rs)
			}
		})
	}
	l.UpsertPod(testpod.New("running").NS("ns").UID("u2").App("c", testpod.GPU(1), testpod.Mem(1024)).Build())
	if err := reserve(ctx, s, "u2", "running", vec(1, 1024)); err == nil || !strings.Contains(err.Error(), "already a recorded pod") {
		t.Fatalf("a review for a recorded pod's UID: %v", err)
	}
	if got := metrics(s).list(&metrics(s).refused); got != "duplicate,duplicate,duplicate" {
		t.Errorf("refusals counted %q", got)
	}
}

// TestReservationsPerNamespaceBounded: the object holds at most
// MaxReservations; the next admission is refused with a message naming the
// setting, and admitted again once one ended.
func TestReservationsPerNamespaceBounded(t *testing.T) {
	ctx := t.Context()
	c := fakeClient(t)
	s, l, _, _ := newStore(t, c, "a")
	s.opts.MaxReservations = 3
	for i := range 3 {
		if err := reserve(ctx, s, fmt.Sprint("u", i), fmt.Sprint("p", i), vec(1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := reserve(ctx, s, "u3", "p3", vec(1, 1)); err == nil || !strings.Contains(err.Error(), "holds 3 reservations") ||
		!strings.Contains(err.Error(), "maxPerNamespace") {
		t.Fatalf("over the bound: %v", err)
	}
	l.UpsertPod(testpod.New("p0").NS("ns").UID("u0").App("c", testpod.GPU(1), testpod.Mem(1)).Build())
	s.Clean(ctx) // marks p0 recorded
	s.Clean(ctx) // every live replica (this one) passed it: removed
	if err := reserve(ctx, s, "u3", "p3", vec(1, 1)); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
	if n := len(usage(t, c, "ns").Status.Reservations); n != 3 {
		t.Fatalf("%d reservations, want 3", n)
	}
}

// fitsDecider decides like the built-in limit against limit MiB, and says
// whether a denied pod would fit without the unconfirmed reservations.
func fitsDecider(l *ledger.Ledger, limit, need int64, ok *bool) decideFn {
	return func(req decision.Request) (verdict, error) {
		snap := l.Namespace("ns", req.Reservations)
		used, reserved, unconfirmed := snap.Used.Of("nvidia"), snap.Reserved.Of("nvidia"), snap.Unconfirmed.Of("nvidia")
		*ok = used.MemMiB+reserved.MemMiB+need <= limit
		return verdict{Reserve: *ok, Demand: vec(1, need),
			Wait: !*ok && used.MemMiB+reserved.MemMiB-unconfirmed.MemMiB+need <= limit}, nil
	}
}

// TestReviewWaitsForUnconfirmedReservations: a pod denied only because of
// a reservation whose pod never appeared (its create failed after
// admission, or the review was forged) waits for it, is admitted once a
// read confirmed it absent, and the same write removes it; if the blocker
// turns out to be a real pod, the review is denied; if the blocker cannot
// be checked before the review's deadline, it is denied at once.
func TestReviewWaitsForUnconfirmedReservations(t *testing.T) {
	const confirmAfter = 300 * time.Millisecond
	var ghostAt time.Time              // before the ghost was reserved: its check is due confirmAfter after
	var podRead atomic.Pointer[func()] // when set, called after each read of a pod (an absence check)
	setUp := func(t *testing.T, confirmAfter time.Duration, objs ...client.Object) (*Store, *ledger.Ledger, client.Client) {
		podRead.Store(nil)
		c := interceptor.NewClient(fakeClient(t, objs...), interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := cl.Get(ctx, key, obj, opts...)
			if f := podRead.Load(); f != nil {
				if _, pod := obj.(*corev1.Pod); pod {
					(*f)()
				}
			}
			return err
		}})
		ghostAt = time.Now()
		s, l, _, _ := newStoreWith(t, c, "a", Options{ConfirmAfter: confirmAfter,
			RecheckMax: 10 * time.Second, ReadsPerSecond: 10})
		if err := reserve(t.Context(), s, "ghost", "ghost", vec(1, 8192)); err != nil {
			t.Fatal(err)
		}
		return s, l, c
	}
	admit := func(s *Store, l *ledger.Ledger, within time.Duration) (bool, time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		var ok bool
		start := time.Now()
		err := admitPod(ctx, s, "ns", "real", "real", fitsDecider(l, 10240, 4096, &ok))
		return ok, time.Since(start), err
	}

	t.Run("blocker absent: admitted in the write that removes it", func(t *testing.T) {
		s, l, c := setUp(t, confirmAfter)
		ok, took, err := admit(s, l, 5*time.Second)
		if err != nil || !ok || time.Since(ghostAt) < confirmAfter {
			t.Fatalf("allowed %v after %s, error %v; want allowed once the ghost is due, about %s after it was reserved", ok, took, err, confirmAfter)
		}
		if rs := usage(t, c, "ns").Status.Reservations; len(rs) != 1 || rs[0].PodUID != "real" || metrics(s).list(&metrics(s).ended) != EndAbsent {
			t.Fatalf("reservations %+v, ended %q; want real's alone, the ghost ended absent", rs, metrics(s).list(&metrics(s).ended))
		}
	})
	t.Run("blocker is a real pod: denied", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ghost", UID: "ghost"}}
		s, l, c := setUp(t, confirmAfter, pod)
		var once sync.Once
		recordLater := func() { // the absence check found the pod unseen; the watch records it after
			once.Do(func() {
				go l.UpsertPod(testpod.New("ghost").NS("ns").UID("ghost").App("c", testpod.GPU(1), testpod.Mem(8192)).Build())
			})
		}
		podRead.Store(&recordLater)
		ok, took, err := admit(s, l, 5*time.Second)
		if err != nil || ok || took > 3*time.Second {
			t.Fatalf("allowed %v after %s, error %v; want denied once the pod is recorded", ok, took, err)
		}
		// The ghost's reservation is kept (marked) or, every live replica
		// having recorded its pod, removed as recorded: never as absent,
		// and nothing is reserved for the denied review.
		rs := usage(t, c, "ns").Status.Reservations
		ended := metrics(s).list(&metrics(s).ended)
		if (len(rs) != 1 || rs[0].PodUID != "ghost") && (len(rs) != 0 || ended != EndRecorded) {
			t.Fatalf("reservations %+v, ended %q; want the ghost's alone, or none with the ghost ended recorded", rs, ended)
		}
	})
	t.Run("blocker due after the deadline: denied at once", func(t *testing.T) {
		s, l, _ := setUp(t, time.Minute) // the ghost first seen as it was reserved, so due in a minute
		ok, took, err := admit(s, l, 5*time.Second)
		if err != nil || ok || took > time.Second {
			t.Fatalf("allowed %v after %s, error %v; want denied at once", ok, took, err)
		}
	})
}

// TestManyDueConfirmedWithOneList: more than listAbove due reservations of
// a namespace are confirmed with one list of its pods (a flood of forged
// reviews leaves hundreds; one read each would take the reads budget many
// seconds): those whose pod is not listed end, the one that exists stays.
func TestManyDueConfirmedWithOneList(t *testing.T) {
	ctx := t.Context()
	exists := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p3", UID: "u3"}}
	var lists, gets int
	base := fakeClient(t, exists)
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*metav1.PartialObjectMetadataList); ok {
				lists++
			}
			return cl.List(ctx, list, opts...)
		},
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				gets++
			}
			return cl.Get(ctx, key, obj, opts...)
		}})
	s, _, _, clk := newStore(t, c, "a")
	s.opts.ReadsPerSecond = 2 // one list fits; eight reads would not
	for i := range 8 {
		if err := reserve(ctx, s, fmt.Sprint("u", i), fmt.Sprint("p", i), vec(1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	clk.SetTime(clk.Now().Add(2 * time.Second)) // past confirmAfter
	if removed := s.Clean(ctx); removed != 7 || lists != 1 || gets != 0 {
		t.Fatalf("removed %d with %d lists and %d reads; want 7 removed with one list", removed, lists, gets)
	}
	if rs := usage(t, c, "ns").Status.Reservations; len(rs) != 1 || rs[0].PodUID != "u3" {
		t.Fatalf("left %+v, want u3's alone", rs)
	}
}
