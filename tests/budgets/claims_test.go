package budgets_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// testNamedClaim: a claim made while the budget had room burns while the
// pods naming it run, so once the budget is spent a pod that requests
// nothing itself but names the claim is denied. The webhook configuration
// must send such a pod for review (its match condition names
// resourceClaimName), or the denial would never be asked for.
func (s *suite) testNamedClaim(ctx context.Context, t *testing.T) {
	const ns = "named-claim"
	if err := s.c.Seed(ctx, ns, "16384"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.kube.ResourceV1().ResourceClaims(ns).Create(ctx, testclaim.HAMiDRA(ns, "held", 1, 1024, 0), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the claim, before any budget: %v", err)
	}
	local.AwaitLedger(t, s.c, ns, func(l ledger.NamespaceSnapshot) bool { return l.Claims == 1 })
	s.createBudget(ctx, t, ns, "none-left", "0")
	_, err := s.create(ctx, namingPod(ns, "uses-held", "held"))
	local.MustContain(t, "a pod naming the claim under a spent budget", fmt.Sprint(err), "denied", `GPUBudget "none-left"`, "is spent")
	if _, err := s.create(ctx, namingPod(ns, "cpu-only", "")); err != nil {
		t.Fatalf("a pod naming no claim under the spent budget: %v", err)
	}
}

// namingPod is a pod requesting nothing that names claim ("" : none).
func namingPod(ns, name, claim string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	if claim != "" {
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim)}}
	}
	return p
}
