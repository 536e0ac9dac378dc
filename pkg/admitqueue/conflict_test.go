package admitqueue

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// TestConflictsByCause: a write lands on the namespace between replica
// a's read and a's write of its reservations. Another replica's admission
// or tidy makes a's write conflict (a decides again, and counts the
// conflict by the winner's cause); the elected replica's summary write
// never does: the summary is another object, so a's write goes through on
// the first try.
func TestConflictsByCause(t *testing.T) {
	for _, tt := range []struct {
		name      string
		between   func(t *testing.T, base client.Client, b *Store)
		conflicts string // the causes a counts, in order
	}{
		{name: "another replica's admission", conflicts: ConflictAdmission, between: func(t *testing.T, _ client.Client, b *Store) {
			t.Helper()
			if err := admitPod(context.Background(), b, "ns", "b1", "b1", allow); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "another replica's tidy", conflicts: ConflictTidy, between: func(t *testing.T, base client.Client, _ *Store) {
			t.Helper()
			rewrite(t, base, gpuadmitv1.LastWrite{Writer: "b", Cause: gpuadmitv1.WriteTidy})
		}},
		{name: "a write that does not say", conflicts: ConflictUnknown, between: func(t *testing.T, base client.Client, _ *Store) {
			t.Helper()
			rewrite(t, base, gpuadmitv1.LastWrite{})
		}},
		{name: "the elected replica's summary", conflicts: "", between: func(t *testing.T, base client.Client, b *Store) {
			t.Helper()
			l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
			l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": "8192"}))
			s := &summary.Summarizer{Client: base, Ledger: l, Reservations: b, Log: logr.Discard()}
			if n := s.Round(context.Background()); n != 1 {
				t.Fatalf("the summarizer wrote %d namespaces, want 1", n)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := fakeClient(t, &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName}})
			b, _, _, _ := newStore(t, base, "b")
			var once atomic.Bool
			c := interceptor.NewClient(base, interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if once.CompareAndSwap(false, true) {
					tt.between(t, base, b)
				}
				return cl.SubResource(sub).Update(ctx, obj, opts...)
			}})
			a, _, _, _ := newStore(t, c, "a")
			if err := admitPod(context.Background(), a, "ns", "a1", "a1", allow); err != nil {
				t.Fatal(err)
			}
			m := metrics(a)
			if got := m.list(&m.causes); got != tt.conflicts {
				t.Errorf("conflicts counted by cause %q, want %q", got, tt.conflicts)
			}
			set := reservationSet(t, base, "ns")
			if !hasReservation(set, "a1") || set.Status.LastWrite != (gpuadmitv1.LastWrite{Writer: "a", Cause: gpuadmitv1.WriteAdmission}) {
				t.Errorf("a's reservation was not written as its admission: %+v", set.Status)
			}
		})
	}
}

func allow(decision.Request) (verdict, error) { return verdict{Reserve: true, Demand: vec(1, 1)}, nil }

// rewrite writes ns's GPUReservationSet as it is, with lw as its last
// write (a stand-in for another writer).
func rewrite(t *testing.T, c client.Client, lw gpuadmitv1.LastWrite) {
	t.Helper()
	set := reservationSet(t, c, "ns")
	set.Status.LastWrite = lw
	if err := c.Status().Update(context.Background(), set); err != nil {
		t.Fatal(err)
	}
}

func hasReservation(set *gpuadmitv1.GPUReservationSet, uid string) bool {
	for _, r := range set.Status.Reservations {
		if string(r.PodUID) == uid {
			return true
		}
	}
	return false
}
