package reservation

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// TestHoldUnconfirmed: a gang's hold is counted as unconfirmed (a review
// denied only by it may wait for its pods' absence) only while every
// admitted pod of the gang still has its reservation, unmarked: a hold
// started by a forged review is no more than its ghost. Once a pod of the
// gang is recorded (its reservation marked, or removed as recorded), the
// hold is an ordinary one; it is counted the same either way.
func TestHoldUnconfirmed(t *testing.T) {
	res := func(uid, rv string) gpuadmitv1.Reservation {
		return gpuadmitv1.Reservation{PodUID: types.UID(uid), PodName: uid, Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 1024}, RecordedResourceVersion: rv}
	}
	tests := []struct {
		name        string
		pods        []types.UID
		reserved    []gpuadmitv1.Reservation
		unconfirmed bool
	}{
		{name: "its only pod unmarked", pods: []types.UID{"a"}, reserved: []gpuadmitv1.Reservation{res("a", ""), res("x", "7")}, unconfirmed: true},
		{name: "two pods, both unmarked", pods: []types.UID{"a", "b"}, reserved: []gpuadmitv1.Reservation{res("a", ""), res("b", "")}, unconfirmed: true},
		{name: "its pod marked by a replica", pods: []types.UID{"a"}, reserved: []gpuadmitv1.Reservation{res("a", "7")}},
		{name: "one of two pods marked", pods: []types.UID{"a", "b"}, reserved: []gpuadmitv1.Reservation{res("a", ""), res("b", "7")}},
		{name: "one pod's reservation removed as recorded", pods: []types.UID{"a", "b"}, reserved: []gpuadmitv1.Reservation{res("b", "")}},
		{name: "an unrelated unmarked reservation", pods: []types.UID{"a"}, reserved: []gpuadmitv1.Reservation{res("x", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gpuadmitv1.GangHold{Kind: gpuadmitv1.GangOptIn, Name: "g", MinCount: 4, Slots: 3, Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 1024}, Pods: tt.pods}
			st := gpuadmitv1.GPUReservationSetStatus{Reservations: tt.reserved, Gangs: []gpuadmitv1.GangHold{h}}
			if got := HoldUnconfirmed(st, h); got != tt.unconfirmed {
				t.Errorf("HoldUnconfirmed = %v, want %v", got, tt.unconfirmed)
			}
			var hold *Reservation
			for _, r := range Countable(st, "") {
				if r.UID == HoldUID(h.Kind, h.Name) {
					hold = &r
				}
			}
			if hold == nil || hold.Unconfirmed != tt.unconfirmed || !hold.Demand.Equal(vec(3, 3072)) {
				t.Errorf("hold counted as %+v: want 3 x 1 GiB, unconfirmed %v", hold, tt.unconfirmed)
			}
		})
	}
}
