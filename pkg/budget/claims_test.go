package budget

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

type claimCharges map[types.UID]effective.Usage

func (c claimCharges) ClaimCharge(uid types.UID) (effective.Usage, bool) {
	u, ok := c[uid]
	return u, ok
}

// TestClaimsBurnOverTheirPodsRuns: a template's claim burns while its
// pod runs; a claim two pods name burns over the union of their runs,
// once (not once per pod); a deleted claim burns no further; a pod using
// only claims is tracked for its claims' sake.
func TestClaimsBurnOverTheirPodsRuns(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	one := effective.Usage{effective.Nvidia().Name: {GPU: 1}}
	tr := NewTracker(Options{Families: []effective.Family{effective.Nvidia()}, Clock: clk, Tolerance: time.Minute,
		Claims: claimCharges{"c-owned": one, "c-shared": one}})
	b := gb("ml", "hours", monthly(), "10")
	tr.UpsertBudget(b)
	shared := "shared"
	p := running(gpuPod("ml", "p", 1, t0), t0)
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "s", ResourceClaimName: &shared}}
	q := running(gpuPod("ml", "q", 0, t0), t0.Add(10*time.Minute))
	q.Spec.Containers[0].Resources = corev1.ResourceRequirements{} // claims only
	q.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "s", ResourceClaimName: &shared}}
	yes := true
	owned := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p-gpu", UID: "c-owned",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: p.UID, Controller: &yes}}}}
	sharedClaim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: shared, UID: "c-shared"}}
	tr.UpsertClaim(owned)
	tr.UpsertClaim(sharedClaim)
	tr.UpsertPod(p)
	clk.SetTime(t0.Add(10 * time.Minute))
	tr.UpsertPod(q)
	clk.SetTime(t0.Add(30 * time.Minute))
	tr.UpsertPod(finished(p, t0, clk.Now()))
	clk.SetTime(t0.Add(40 * time.Minute))
	tr.UpsertPod(finished(q, t0.Add(10*time.Minute), clk.Now()))
	clk.SetTime(t0.Add(45 * time.Minute))
	tr.DeleteClaim("ml", shared)
	// p's own 30, the owned claim's 30, the shared claim's 40 (0..40: the
	// union of p's and q's runs), q's own nothing.
	if got, want := used(t, tr, refOf(b), t0.Add(time.Hour)), gpuMinutes(30+30+40); got != want {
		t.Fatalf("used %d, want %d", got, want)
	}
	kinds := map[string]int{}
	for _, pb := range tr.PodBurns("ml", t0.Add(time.Hour)) {
		kinds[pb.Kind]++
	}
	if kinds["Pod"] != 1 || kinds["ResourceClaim"] != 2 {
		t.Errorf("PodBurns kinds %v, want 1 pod (q burns nothing of its own) and 2 claims", kinds)
	}
}
