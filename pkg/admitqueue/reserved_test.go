package admitqueue

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// TestReservedCountsKeptReservations: what the summaries and metrics read
// includes the reservations of an object deleted by hand, kept until it is
// written back, and leaves out a malformed object's.
func TestReservedCountsKeptReservations(t *testing.T) {
	held := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "gone", Name: gpuadmitv1.ObjectName},
		Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{{PodUID: "r1", PodName: "r1", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 1000}}}}}
	bad := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "bad", Name: gpuadmitv1.ObjectName},
		Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{{PodUID: "x"}, {PodUID: "x"}}}}
	c := fakeClient(t, bad)
	s, _, _, _ := newStore(t, c, "a")
	s.Deleted(toolscache.DeletedFinalStateUnknown{Key: "gone/usage", Obj: held})
	got, err := s.Reserved(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["gone"]) != 1 || got["gone"][0].UID != "r1" {
		t.Fatalf("reserved %+v, want the kept r1 alone", got)
	}
}
