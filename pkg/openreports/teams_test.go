package openreports

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// TestTeamResults: each namespace a team counts gets a result per team
// limit, naming the GPUClusterQuota and charged with the team's usage over
// its namespaces together (a namespace within its own quota fails when
// the team is over), even without a ResourceQuota of its own; a namespace
// outside the team gets none.
func TestTeamResults(t *testing.T) {
	h := newHarness(t, reservations{})
	for _, ns := range []string{"ml-dev", "ml-train", "outside"} {
		h.l.UpsertNamespace(testns.New(ns, nil))
	}
	h.l.UpsertClusterQuota(&gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: "ml"},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{Namespaces: []string{"ml-dev", "ml-train"},
			Hard: corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("2")}}})
	h.l.UpsertPod(testpod.New("a").NS("ml-dev").UID("a").App("c", testpod.GPU(1)).Build())
	h.l.UpsertPod(testpod.New("b").NS("ml-train").UID("b").App("c", testpod.GPU(1)).Build())
	h.l.UpsertPod(testpod.New("x").NS("outside").UID("x").App("c", testpod.GPU(4)).Build())
	r := h.round("ml-dev")
	if r == nil {
		t.Fatal("no Report for ml-dev, which has a team limit")
	}
	res, ok := results(r)["GPUClusterQuota ml: nvidia.com/gpu"]
	if !ok || res.Result != resultPass || res.Subjects[0].Kind != "GPUClusterQuota" || !strings.Contains(res.Description, "2 charged") ||
		!strings.Contains(res.Description, "GPUClusterQuota ml") {
		t.Fatalf("ml-dev's team result %+v", res)
	}
	h.l.UpsertPod(testpod.New("c").NS("ml-train").UID("c").App("c", testpod.GPU(1)).Build())
	if res := results(h.round("ml-dev"))["GPUClusterQuota ml: nvidia.com/gpu"]; res.Result != resultFail || res.Properties["charged"] != "3" {
		t.Fatalf("the team over its limit (a pod in the other namespace): ml-dev's result %+v", res)
	}
	if r := h.round("outside"); r != nil {
		t.Fatalf("outside the team, no limit: a Report %+v", r.Results)
	}
}
