package decision

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
)

// TestClaimsAreInNoScope: as in Kubernetes (its claim evaluator matches no
// scope), a scoped ResourceQuota neither counts a ResourceClaim nor limits
// one; the quotas without scopes do. The scope here (no priority class)
// would match the claim's stand-in pod if scopes were applied to claims.
func TestClaimsAreInNoScope(t *testing.T) {
	e := loadedEngine(t)
	used := testclaim.HAMiDRA("team-a", "used", 1, 12288, 0)
	used.UID = "used-uid"
	d, l := claimDecider(t, e, []*resourcev1.ResourceClaim{used})
	scoped := testquota.New("team-a", "classless", map[string]string{"limits.nvidia.com/gpumem": "1024"})
	scoped.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpDoesNotExist}}}
	l.UpsertQuota(scoped)
	if s := l.Namespace("team-a", nil); len(s.Scoped) != 1 || !s.Scoped[0].Used.IsZero() {
		t.Fatalf("scoped quotas %+v: want classless counting no claim", s.Scoped)
	}
	got, err := d.Decide(context.Background(), Request{Claim: testclaim.HAMiDRA("team-a", "c", 1, 2048, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Allowed {
		t.Errorf("a claim denied by a scoped quota: %q", got.Denials)
	}
	got, err = d.Decide(context.Background(), Request{Claim: testclaim.HAMiDRA("team-a", "c", 1, 8192, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Allowed || len(got.Exceeded) != 1 || got.Exceeded[0].Quota != "q" {
		t.Errorf("a claim over the quota without scopes: allowed %v, exceeded %+v", got.Allowed, got.Exceeded)
	}
}

// TestSecondFamilyScopedQuota: a scoped quota on a second family's
// resource limits the pods in its scopes against their own use of that
// family, names its resources, and leaves the other pods alone.
func TestSecondFamilyScopedQuota(t *testing.T) {
	e := loadedEngine(t)
	highNPU := func(name, class string) *corev1.Pod {
		p := testpod.New(name).NS("team-a").App("c", npu(1, 16384)...).Build()
		p.Spec.PriorityClassName = class
		return p
	}
	running := highNPU("high-1", "high")
	running.Status.QOSClass = corev1.PodQOSBestEffort
	other := highNPU("low-1", "low")
	other.Status.QOSClass = corev1.PodQOSBestEffort
	d, l := twoFamilyDecider(t, e, running, other)
	q := testquota.New("team-a", "high-npu", map[string]string{"limits." + string(ascendMem): "20000"})
	q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
	l.UpsertQuota(q)
	got, err := d.Decide(context.Background(), Request{Pod: highNPU("high-2", "high")})
	if err != nil {
		t.Fatal(err)
	}
	want := `namespace "team-a": huawei.com/Ascend910B2-memory: pod needs 16384 MiB, 16384 MiB used by the pods in the scopes of ResourceQuota "high-npu" (PriorityClass In (high)) + 0 MiB reserved, limit 20000 MiB (limits.huawei.com/Ascend910B2-memory)`
	if got.Allowed || len(got.Denials) != 1 || got.Denials[0] != want {
		t.Errorf("high-2: allowed %v %q, want %q", got.Allowed, got.Denials, want)
	}
	if got, _ := d.Decide(context.Background(), Request{Pod: highNPU("low-2", "low")}); !got.Allowed {
		t.Errorf("low-2 denied: %q", got.Denials)
	}
}
