package decision

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// namedClaimDecider is budgetDecider whose ledger records the standalone
// ResourceClaim team-a/shared (one GPU of 10240 MiB).
func namedClaimDecider(t *testing.T, b Budgets, clk *clocktesting.FakeClock) *Decider {
	t.Helper()
	cfg := config.Default()
	fams := config.Families(cfg)
	ch, err := dra.NewCharger(config.DeviceClasses(cfg), fams)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(ledger.Options{Families: fams, Claims: ch, Log: logr.Discard()})
	testns.Known(l, "team-a")
	l.UpsertNode(testnode.WithGPUs("a10-1", nil, 24576, 24576))
	c := testclaim.HAMiDRA("team-a", "shared", 1, 10240, 0)
	c.UID = "claim-shared"
	l.UpsertClaim(c)
	if u, ok := l.NamedClaimCharge("team-a", "shared"); !ok || u.Of("nvidia").GPU != 1 {
		t.Fatalf("the ledger charges the claim %v (%v), want 1 GPU", u, ok)
	}
	d, err := New(loadedEngine(t), l, cfg, logr.Discard(), WithBudgets(b, clk))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// namingPod is a CPU pod whose container uses the claim named claim.
func namingPod(claim string, deadline int64) *corev1.Pod {
	p := testpod.New("p").NS("team-a").App("c", testpod.CPU("1")).Build()
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "g", ResourceClaimName: ptr.To(claim)},
		{Name: "again", ResourceClaimName: ptr.To(claim)}} // named twice: counted once
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "g"}, {Name: "again"}}
	if deadline >= 0 {
		p.Spec.ActiveDeadlineSeconds = ptr.To(deadline)
	}
	return p
}

// TestBudgetPodNamingAnExistingClaim attacks a pod that names a standalone
// ResourceClaim (resourceClaimName): its own demand is no GPU, but its run
// makes the claim burn. Once the budget covering the claim's resource is
// spent, such pods must be denied (created pod after pod, each one would
// keep the claim burning); its deadline bounds the claim's burn through
// it; its quota demand stays its own (the claim is charged once).
func TestBudgetPodNamingAnExistingClaim(t *testing.T) {
	tests := []struct {
		name     string
		used     burn.Amount
		claim    string
		deadline int64
		reviewed bool
		denial   string // "" : allowed
	}{
		{"spent: denied", 5 * hour, "shared", -1, true, `GPUBudget "ml-hours" is spent: 5 of 1 nvidia.com/gpu-hours used`},
		{"deadline past what is left: denied", hour / 2, "shared", 7200, true, `activeDeadlineSeconds 7200 lets this pod burn up to 2 nvidia.com/gpu-hours`},
		{"deadline within what is left", hour / 2, "shared", 600, true, ""},
		{"not spent, no deadline", hour / 2, "shared", -1, true, ""},
		{"a claim the ledger does not record (decided at its own CREATE)", 5 * hour, "unknown", -1, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &fakeBudgets{by: map[string][]budget.Standing{"team-a": {gpuBudget("nvidia.com/gpu", "gpu", hour, tt.used)}}}
			d := namedClaimDecider(t, b, clocktesting.NewFakeClock(time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)))
			pod := namingPod(tt.claim, tt.deadline)
			if got := d.Requests(pod); got != tt.reviewed {
				t.Fatalf("Requests = %v, want %v: the edge's NoManagedResource shortcut would skip the budgets", got, tt.reviewed)
			}
			if ds, err := d.Demand(context.Background(), pod); ds != nil || err != nil {
				t.Errorf("Demand = %v, %v: the pod's own demand (its annotation) must not carry the claim", ds, err)
			}
			res, err := d.Decide(context.Background(), Request{Pod: pod, NoManagedResource: !d.Requests(pod)})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Effective.IsZero() {
				t.Errorf("Effective = %v: the claim would be reserved twice (it is charged on its own)", res.Effective)
			}
			if tt.denial == "" {
				if !res.Allowed {
					t.Errorf("denied: %q", res.Denials)
				}
				return
			}
			if res.Allowed || !strings.Contains(strings.Join(res.Denials, "; "), tt.denial) {
				t.Errorf("allowed %v, denials %q: want a denial containing %q", res.Allowed, res.Denials, tt.denial)
			}
		})
	}
}

// TestBudgetNegativeHardDenies: a negative spec.hard that reaches the
// tracker (a CRD without its validation rule) is enforced as 0, with the
// problem named (pkg/budget); admission must then deny every pod that
// would burn the resource, saying the budget allows nothing and why,
// never admit as if the key were absent.
func TestBudgetNegativeHardDenies(t *testing.T) {
	const problem = "spec.hard[nvidia.com/gpu]: -1 is negative; enforced as 0"
	s := gpuBudget("nvidia.com/gpu", "gpu", 0, 0)
	s.Problems = []string{problem}
	b := &fakeBudgets{by: map[string][]budget.Standing{"team-a": {s}}}
	d := budgetDecider(t, loadedEngine(t), b, clocktesting.NewFakeClock(time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)))
	res, err := d.Decide(context.Background(), Request{Pod: gpuPod("team-a", 1, -1)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Allowed {
		t.Fatalf("a GPU pod admitted under a budget of 0 (a negative spec.hard): warnings %q", res.Warnings)
	}
	denials := strings.Join(res.Denials, "; ")
	if !strings.Contains(denials, `GPUBudget "ml-hours" is spent: 0 of 0 nvidia.com/gpu-hours used`) {
		t.Errorf("denials %q: want the budget named as spent, 0 of 0", res.Denials)
	}
	if !strings.Contains(strings.Join(res.Warnings, "; "), problem) {
		t.Errorf("warnings %q: want the problem %q named", res.Warnings, problem)
	}
}
