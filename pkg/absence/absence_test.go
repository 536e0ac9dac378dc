package absence

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// seen is a watch that recorded the pods it names.
type seen map[types.UID]string

func (s seen) Seen(uid types.UID) string { return s[uid] }

func pod(name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
}

func claim(name, uid string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
}

// failing is a reader whose every read fails.
func failing(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("the API server is unreachable")
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("the API server is unreachable")
		}})
}

// TestConfirmEndsOnlyWhatIsGone attacks the one way a reservation nobody
// recorded ends: a read must find its pod (or claim) missing, or another
// object (another UID) under its name. A pod that exists unrecorded, or a
// read that fails, keeps the reservation (its charge stays), by name and
// by list alike.
func TestConfirmEndsOnlyWhatIsGone(t *testing.T) {
	podRes := func(name, uid string) gpuadmitv1.Reservation {
		return gpuadmitv1.Reservation{PodUID: types.UID(uid), PodName: name}
	}
	claimRes := func(name, uid string) gpuadmitv1.Reservation {
		return gpuadmitv1.Reservation{PodUID: types.UID(uid), ClaimName: name}
	}
	for _, tt := range []struct {
		name   string
		objs   []client.Object
		fail   bool
		rs     []gpuadmitv1.Reservation
		absent []string // the UIDs found absent; every other is kept
	}{
		{"pod not found", nil, false, []gpuadmitv1.Reservation{podRes("p", "u")}, []string{"u"}},
		{"another pod under its name", []client.Object{pod("p", "other")}, false, []gpuadmitv1.Reservation{podRes("p", "u")}, []string{"u"}},
		{"its pod exists unrecorded", []client.Object{pod("p", "u")}, false, []gpuadmitv1.Reservation{podRes("p", "u")}, nil},
		{"the read fails", nil, true, []gpuadmitv1.Reservation{podRes("p", "u")}, nil},
		{"claim gone", nil, false, []gpuadmitv1.Reservation{claimRes("c", "u")}, []string{"u"}},
		{"claim exists", []client.Object{claim("c", "u")}, false, []gpuadmitv1.Reservation{claimRes("c", "u")}, nil},
		{"by list: only the missing end", []client.Object{pod("p2", "u2"), claim("c5", "u5")}, false, []gpuadmitv1.Reservation{
			podRes("p0", "u0"), podRes("p1", "u1"), podRes("p2", "u2"), podRes("p3", "u3"), claimRes("c4", "u4"), claimRes("c5", "u5"),
		}, []string{"u0", "u1", "u3", "u4"}},
		{"by list: the list fails", nil, true, []gpuadmitv1.Reservation{
			podRes("p0", "u0"), podRes("p1", "u1"), podRes("p2", "u2"), podRes("p3", "u3"), podRes("p4", "u4"),
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tt.objs...).Build()
			if tt.fail {
				c = failing(c)
			}
			a := New(c, c, seen{}, Options{ConfirmAfter: time.Second, RecheckMax: 4 * time.Second})
			a.Confirm(t.Context(), "ns", tt.rs)
			want := map[types.UID]bool{}
			for _, uid := range tt.absent {
				want[types.UID(uid)] = true
			}
			for _, r := range tt.rs {
				if got := a.IsAbsent(r.PodUID); got != want[r.PodUID] {
					t.Errorf("%s absent: %v, want %v", r.PodUID, got, want[r.PodUID])
				}
			}
		})
	}
}

// TestConfirmDueReadsOnlyWhatIsDue: ConfirmDue reads no reservation before
// confirmAfter, none whose pod this replica's watch recorded, and no more
// than its budget; past confirmAfter a missing pod is found absent, and
// its next check backs off.
func TestConfirmDueReadsOnlyWhatIsDue(t *testing.T) {
	reads := 0
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return cl.Get(ctx, key, obj, opts...)
		}})
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	a := New(c, c, seen{"rec": "7"}, Options{ConfirmAfter: time.Second, RecheckMax: 4 * time.Second, Clock: clk})
	u := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	for _, uid := range []string{"a", "b", "rec"} {
		u.Status.Reservations = append(u.Status.Reservations, gpuadmitv1.Reservation{PodUID: types.UID(uid), PodName: uid})
	}
	if n := a.ConfirmDue(t.Context(), u, 10); n != 0 || reads != 0 {
		t.Fatalf("first sight: %d reads (%d made), want none before confirmAfter", n, reads)
	}
	clk.Step(time.Second)
	if n := a.ConfirmDue(t.Context(), u, 1); n != 1 || reads != 1 {
		t.Fatalf("budget 1: %d reads (%d made), want 1", n, reads)
	}
	if n := a.ConfirmDue(t.Context(), u, 10); n != 1 || reads != 2 {
		t.Fatalf("the other due one: %d reads (%d made), want 1 (the first is not due again yet, rec is recorded)", n, reads)
	}
	for _, uid := range []types.UID{"a", "b"} {
		if !a.IsAbsent(uid) {
			t.Errorf("%s: not found absent", uid)
		}
		if due := a.DueAt(uid).Sub(clk.Now()); due != 2*time.Second {
			t.Errorf("%s: next check in %s, want 2s (backing off)", uid, due)
		}
	}
	if a.IsAbsent("rec") {
		t.Errorf("a reservation whose pod the watch recorded was confirmed absent")
	}
	a.Forget(map[types.UID]bool{"b": true})
	if a.IsAbsent("a") || !a.IsAbsent("b") {
		t.Errorf("Forget kept a (%v) or dropped b (%v)", a.IsAbsent("a"), a.IsAbsent("b"))
	}
}
