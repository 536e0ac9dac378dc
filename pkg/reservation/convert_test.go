package reservation

import (
	"slices"
	"strings"
	"testing"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
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
	uids := func(rs []Reservation) []string {
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

// A reservation keeps the nvidia family's demand in demand (what every
// release counts) and every other family's in families; both count, and
// a family written under families as "nvidia" is never counted twice.
func vec(g, m int64) effective.Usage {
	return effective.UsageOf("nvidia", effective.Vector{GPU: g, MemMiB: m})
}

func TestReservationFamilies(t *testing.T) {
	ascend := effective.Vector{GPU: 1, MemMiB: 16384, Cores: 25}
	u := effective.Usage{"nvidia": {GPU: 1, MemMiB: 1024}, "ascend-910B2": ascend}
	demand, others := DemandOf(u)
	if demand != (gpuadmitv1.Demand{GPU: 1, GPUMem: 1024}) || len(others) != 1 || others["ascend-910B2"] != (gpuadmitv1.Demand{GPU: 1, GPUMem: 16384, GPUCores: 25}) {
		t.Fatalf("DemandOf = %+v, %+v", demand, others)
	}
	r := gpuadmitv1.Reservation{PodUID: "u", PodName: "p", Demand: demand, Families: others}
	if got := UsageOf(r); !got.Equal(u) {
		t.Errorf("UsageOf = %v, want %v", got, u)
	}
	r.Families["nvidia"] = gpuadmitv1.Demand{GPU: 9}
	if got := UsageOf(r); !got.Equal(u) {
		t.Errorf("UsageOf with families.nvidia = %v, want %v (counted once)", got, u)
	}
	bad := gpuadmitv1.GPUReservationSet{Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{{PodUID: "u",
		Families: map[string]gpuadmitv1.Demand{"ascend-910B2": {GPUMem: -1}}}}}}
	if err := Validate(&bad); err == nil || !strings.Contains(err.Error(), "negative demand") {
		t.Errorf("Validate of a negative family demand = %v, want an error", err)
	}
}
