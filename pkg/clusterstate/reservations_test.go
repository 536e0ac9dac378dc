package clusterstate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// usage is team-a's GPUReservationSet holding rs.
func usage(t *testing.T, rs ...gpuadmitv1.Reservation) runtime.Object {
	t.Helper()
	u := &gpuadmitv1.GPUReservationSet{TypeMeta: metav1.TypeMeta{APIVersion: gpuadmitv1.Group + "/" + gpuadmitv1.Version, Kind: "GPUReservationSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: gpuadmitv1.ObjectName},
		Status:     gpuadmitv1.GPUReservationSetStatus{Reservations: rs, ReservationCount: int32(len(rs))}}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func reserved(uid string, mem int64, recordedAt string) gpuadmitv1.Reservation {
	return gpuadmitv1.Reservation{PodUID: types.UID(uid), PodName: "pod-" + uid, Writer: "r1",
		Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: mem}, RecordedResourceVersion: recordedAt}
}

func TestReservations(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		podsRV  string
		want    []reservation.Reservation
		wantErr string
	}{
		{name: "no GPUReservationSet (or no CRD): none", objects: func(*testing.T) []runtime.Object { return nil }, podsRV: "10"},
		{name: "unrecorded, and recorded after the pods were listed: counted; recorded before: not",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{usage(t, reserved("u1", 1024, ""), reserved("u2", 2048, "9"), reserved("u3", 4096, "11"))}
			},
			podsRV: "10",
			want: []reservation.Reservation{{UID: "u1", Name: "pod-u1", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1024}), Unconfirmed: true},
				{UID: "u3", Name: "pod-u3", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 4096})}}},
		{name: "pods listed at an unknown version: every reservation",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{usage(t, reserved("u2", 2048, "9"))}
			},
			want: []reservation.Reservation{{UID: "u2", Name: "pod-u2", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 2048})}}},
		{name: "a negative demand is an error",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{usage(t, reserved("u1", -1, ""))}
			},
			wantErr: "GPUReservationSet team-a/usage: reservation of pod u1 has a negative demand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{clusterstate.GPUReservationSets(): "GPUReservationSetList"}, tt.objects(t)...)
			got, err := clusterstate.Reservations(context.Background(), c, "team-a", tt.podsRV)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tt.want, func(a, b reservation.Reservation) bool {
				return a.UID == b.UID && a.Name == b.Name && a.Unconfirmed == b.Unconfirmed && a.Demand.Equal(b.Demand)
			}) {
				t.Errorf("reservations %+v, want %+v", got, tt.want)
			}
		})
	}
}
