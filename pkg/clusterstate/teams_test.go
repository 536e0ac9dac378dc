package clusterstate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

func unstructuredOf(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func gcq(name string, named ...string) *gpuadmitv1.GPUClusterQuota {
	return &gpuadmitv1.GPUClusterQuota{TypeMeta: metav1.TypeMeta{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: "GPUClusterQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gpuadmitv1.GPUClusterQuotaSpec{Namespaces: named, Hard: corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("4")}}}
}

func teamSet(ns, name string, st gpuadmitv1.GPUReservationSetStatus) *gpuadmitv1.GPUReservationSet {
	return &gpuadmitv1.GPUReservationSet{TypeMeta: metav1.TypeMeta{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: "GPUReservationSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: st}
}

func entry(uid, ns string) gpuadmitv1.Reservation {
	return gpuadmitv1.Reservation{PodUID: types.UID("uid-" + uid), PodName: uid, Namespace: ns, User: "alice", Demand: gpuadmitv1.Demand{GPU: 1}}
}

// TestReadTeamsOnlyGpuadmitsNamespace: the teams' objects are read in
// gpuadmit's namespace only (an object named gcq.ml that a user made in
// his own namespace is never counted); the quotas are listed.
func TestReadTeamsOnlyGpuadmitsNamespace(t *testing.T) {
	objs := []runtime.Object{unstructuredOf(t, gcq("ml", "ml-dev")),
		unstructuredOf(t, teamSet("gpuadmit-system", "gcq.ml", gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{entry("a", "ml-dev")}})),
		unstructuredOf(t, teamSet("ml-dev", "gcq.ml", gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{entry("forged", "ml-dev")}}))}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		clusterstate.GPUClusterQuotas(): "GPUClusterQuotaList", clusterstate.GPUReservationSets(): "GPUReservationSetList"}, objs...)
	teams, err := clusterstate.ReadTeams(context.Background(), c, "gpuadmit-system", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(teams.Quotas) != 1 || teams.Quotas[0].Name != "ml" {
		t.Fatalf("quotas %+v", teams.Quotas)
	}
	st := teams.Objects["ml"]
	if len(st.Reservations) != 1 || st.Reservations[0].PodName != "a" {
		t.Fatalf("the team's reservations %+v: want gpuadmit's namespace's object only", st.Reservations)
	}
}

// TestTeamsFor: a request's teams are those selecting its namespace and
// those listing it as departed, sorted, each with its members and its
// object's reservations; a malformed object is warned of and counts
// nothing; a namespace no team counts gets none.
func TestTeamsFor(t *testing.T) {
	objs := &manifest.Objects{}
	add := func(o any, kind, ns, name string) {
		raw := unstructuredOf(t, o)
		b, err := raw.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		objs.Other = append(objs.Other, &manifest.Workload{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: kind, Namespace: ns, Name: name, Object: b})
	}
	add(gcq("ml", "ml-dev", "ml-train"), "GPUClusterQuota", "", "ml")
	add(gcq("old", "elsewhere"), "GPUClusterQuota", "", "old")
	add(gcq("broken", "ml-dev"), "GPUClusterQuota", "", "broken")
	add(teamSet("gpuadmit-system", "gcq.ml", gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{entry("a", "ml-train")}}),
		"GPUReservationSet", "gpuadmit-system", "gcq.ml")
	add(teamSet("gpuadmit-system", "gcq.old", gpuadmitv1.GPUReservationSetStatus{Departures: []gpuadmitv1.Departure{{Namespace: "ml-dev"}}}),
		"GPUReservationSet", "gpuadmit-system", "gcq.old")
	add(teamSet("gpuadmit-system", "gcq.broken", gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{entry("x", "ml-dev"), entry("x", "ml-dev")}}),
		"GPUReservationSet", "gpuadmit-system", "gcq.broken")
	teams, err := clusterstate.TeamsIn(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(teams.Warnings) != 1 || !strings.Contains(teams.Warnings[0], "gcq.broken") {
		t.Errorf("warnings %q: want the malformed object named", teams.Warnings)
	}
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	testns.Known(l, "ml-dev", "ml-train", "elsewhere", "outside")
	teams.Feed(l)
	got := teams.For(l, "ml-dev")
	var desc []string
	for _, tm := range got {
		desc = append(desc, fmt.Sprintf("%s%v/%d", tm.Quota.Name, tm.Members, len(tm.Reservations)))
	}
	if want := "[broken[ml-dev]/0 ml[ml-dev ml-train]/1 old[elsewhere ml-dev]/0]"; fmt.Sprint(desc) != want {
		t.Errorf("teams of ml-dev %v, want %s", desc, want)
	}
	if got := teams.For(l, "outside"); len(got) != 0 {
		t.Errorf("outside counted by %+v", got)
	}
}
