package gpuusage

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestCountable: a replica whose pod watch reached podsRV counts every
// reservation but those recorded at a version its watch passed (numerically:
// "9" is before "10"); one no replica recorded is unconfirmed; a watch of
// unknown progress counts them all.
func TestCountable(t *testing.T) {
	st := gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{
		{PodUID: "new", PodName: "new", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 100}},
		{PodUID: "old", PodName: "old", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 200}, RecordedResourceVersion: "9"},
		{PodUID: "later", PodName: "later", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 300}, RecordedResourceVersion: "11"},
	}}
	uids := func(rs []ledger.Reservation) []string {
		var out []string
		for _, r := range rs {
			out = append(out, string(r.UID))
		}
		return out
	}
	if got := Countable(st, "10"); !slices.Equal(uids(got), []string{"new", "later"}) || !got[0].Unconfirmed || got[1].Unconfirmed ||
		!got[1].Demand.Equal(vec(1, 300)) {
		t.Fatalf("at 10: %+v", got)
	}
	if got := Countable(st, ""); len(got) != 3 {
		t.Fatalf("unknown progress: %+v, want all three", got)
	}
}

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

// A reservation keeps the nvidia family's demand in demand (what every
// release counts) and every other family's in families; both count, and
// a family written under families as "nvidia" is never counted twice.
func TestReservationFamilies(t *testing.T) {
	ascend := effective.Vector{GPU: 1, MemMiB: 16384, Cores: 25}
	u := effective.Usage{"nvidia": {GPU: 1, MemMiB: 1024}, "ascend-910B2": ascend}
	demand, others := demandOf(u)
	if demand != (gpuadmitv1.Demand{GPU: 1, GPUMem: 1024}) || len(others) != 1 || others["ascend-910B2"] != (gpuadmitv1.Demand{GPU: 1, GPUMem: 16384, GPUCores: 25}) {
		t.Fatalf("demandOf = %+v, %+v", demand, others)
	}
	r := gpuadmitv1.Reservation{PodUID: "u", PodName: "p", Demand: demand, Families: others}
	if got := usageOf(r); !got.Equal(u) {
		t.Errorf("usageOf = %v, want %v", got, u)
	}
	r.Families["nvidia"] = gpuadmitv1.Demand{GPU: 9}
	if got := usageOf(r); !got.Equal(u) {
		t.Errorf("usageOf with families.nvidia = %v, want %v (counted once)", got, u)
	}
	bad := gpuadmitv1.GPUReservationSet{Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{{PodUID: "u",
		Families: map[string]gpuadmitv1.Demand{"ascend-910B2": {GPUMem: -1}}}}}}
	if err := Validate(&bad); err == nil || !strings.Contains(err.Error(), "negative demand") {
		t.Errorf("Validate of a negative family demand = %v, want an error", err)
	}
}
