package metrics

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// teamReserved are fixed team reservations by quota.
type teamReserved map[string][]reservation.Reservation

func (r teamReserved) TeamReserved(context.Context) (map[string][]reservation.Reservation, error) {
	return r, nil
}

// TestTeamMetrics: the team's used is the sum over its namespaces (never
// one outside it), its reserved the team object's reservations the ledger
// has not recorded (a recorded one counts once, as used), and the over
// series appears only past the limit.
func TestTeamMetrics(t *testing.T) {
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	for _, ns := range []string{"ml-dev", "ml-train", "outside"} {
		l.UpsertNamespace(testns.New(ns, map[string]string{"team": map[bool]string{true: "ml"}[ns != "outside"]}))
	}
	l.UpsertClusterQuota(&gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: "ml"},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			Hard: corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("3")}}})
	pod := func(name, ns string, n int64) {
		l.UpsertPod(testpod.New(name).NS(ns).UID(name).App("c", testpod.GPU(n), testpod.Mem(1024)).Build())
	}
	pod("a", "ml-dev", 1)
	pod("b", "ml-train", 1)
	pod("x", "outside", 5)
	pod("recorded", "ml-train", 1) // its reservation below counts once
	res := teamReserved{"ml": {
		{UID: "r", Name: "r", Namespace: "ml-dev", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1024})},
		{UID: "recorded", Name: "recorded", Namespace: "ml-train", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1024})},
	}}
	compareSeries(t, gathered(t, newTeamCollector(l, res), "gpuadmit_team_quota"), map[string]float64{
		"quota=ml,resource=nvidia.com/gpu,type=hard":     3,
		"quota=ml,resource=nvidia.com/gpu,type=used":     3,
		"quota=ml,resource=nvidia.com/gpu,type=reserved": 1,
	})
	compareSeries(t, gathered(t, newTeamCollector(l, res), "gpuadmit_team_over_limit"), map[string]float64{
		"quota=ml,resource=nvidia.com/gpu": 1,
	})
}
