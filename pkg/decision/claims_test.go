package decision

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// claimDecider decides on a ledger with team-a limited to 16384 MiB, one
// 24 GiB node, and the given claims and pods recorded.
func claimDecider(t *testing.T, ev Evaluator, claims []*resourcev1.ResourceClaim, pods ...*corev1.Pod) (*Decider, *ledger.Ledger) {
	t.Helper()
	cfg := config.Default()
	fams := config.Families(cfg)
	ch, err := dra.NewCharger(config.DeviceClasses(cfg), fams)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(ledger.Options{Families: fams, Claims: ch, Log: logr.Discard()})
	testns.Known(l, "team-a")
	l.UpsertNode(testnode.WithGPUs("a10-1", nil, 24576))
	l.UpsertQuota(testquota.New("team-a", "q", map[string]string{"limits.nvidia.com/gpumem": "16384"}))
	l.UpsertTemplate(testclaim.Template("team-a", "gpu-10g", testclaim.HAMiDRA("team-a", "", 1, 10240, 0)))
	for _, c := range claims {
		l.UpsertClaim(c)
	}
	for _, p := range pods {
		l.UpsertPod(p)
	}
	d, err := New(ev, l, cfg, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return d, l
}

// TestClaimDecisions: claims are decided against the same limits as pods.
// HAMi-DRA: the claim carries the container's gpumem in bytes (MiB × 1024 × 1024) and its gpucores.
func TestClaimDecisions(t *testing.T) {
	e := loadedEngine(t)
	used := testclaim.HAMiDRA("team-a", "used", 1, 12288, 0)
	used.UID = "used-uid"
	tmplPod := testclaim.TemplatePod("team-a", "tp", "gpu-10g")
	tmplPod.UID = "tp-uid"
	gen := testclaim.GeneratedFor(testclaim.HAMiDRA("team-a", "tp-gpu-abc", 1, 10240, 0), tmplPod, "gpu")
	fpga := testclaim.HAMiDRA("team-a", "fpga", 4, 0, 0)
	fpga.Spec.Devices.Requests[0].Exactly.DeviceClassName = "fpga.example.com"
	for _, tc := range []struct {
		name      string
		claims    []*resourcev1.ResourceClaim
		pods      []*corev1.Pod
		req       Request
		allowed   bool
		effective effective.Usage
		want      []string // in the denials or warnings
	}{
		{name: "a HAMi-DRA claim over the limit", claims: []*resourcev1.ResourceClaim{used},
			req:     Request{Claim: testclaim.HAMiDRA("team-a", "c", 1, 8192, 30)},
			allowed: false, effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 8192, Cores: 30}),
			want: []string{`nvidia.com/gpumem: claim needs 8192 MiB, 12288 MiB used + 0 MiB reserved, limit 16384 MiB`}},
		{name: "a HAMi-DRA claim that fits", req: Request{Claim: testclaim.HAMiDRA("team-a", "c", 1, 8192, 30)},
			allowed: true, effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 8192, Cores: 30})},
		{name: "a claim of an ungoverned class", claims: []*resourcev1.ResourceClaim{used}, req: Request{Claim: fpga}, allowed: true},
		{name: "reservations count beside claims", req: Request{Claim: testclaim.HAMiDRA("team-a", "c", 1, 8192, 0),
			Reservations: []reservation.Reservation{{UID: "r", Name: reservation.ClaimKey("other"), Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 10240})}}},
			allowed: false, effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 8192}), want: []string{"10240 MiB reserved"}},
		{name: "a pod's template's claim is its demand", claims: []*resourcev1.ResourceClaim{used},
			req:     Request{Pod: testclaim.TemplatePod("team-a", "p", "gpu-10g")},
			allowed: false, effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 10240}),
			want: []string{"pod needs 10240 MiB, 12288 MiB used"}},
		{name: "a pod naming a claim adds nothing", claims: []*resourcev1.ResourceClaim{used},
			req:     Request{Pod: &corev1.Pod{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "g", ResourceClaimName: ptr.To("used")}}}}},
			allowed: true},
		{name: "a generated claim of a recorded pod is decided as any claim", pods: []*corev1.Pod{tmplPod}, claims: []*resourcev1.ResourceClaim{used},
			req: Request{Claim: gen}, allowed: false, effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 10240}),
			want: []string{"claim needs 10240 MiB"}},
		{name: "a generated claim of an unrecorded pod is decided", claims: []*resourcev1.ResourceClaim{used},
			req: Request{Claim: gen}, allowed: false, effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 10240}),
			want: []string{"claim needs 10240 MiB"}},
		{name: "a claim only init containers use is warned of",
			req: Request{Pod: initOnly(testclaim.TemplatePod("team-a", "p", "gpu-10g"))}, allowed: true,
			effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 10240}),
			want:      []string{`ResourceClaim "gpu" is used only by init containers`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			captured := &capturing{Evaluator: e}
			d, _ := claimDecider(t, captured, tc.claims, tc.pods...)
			if tc.req.Pod != nil && tc.req.Pod.Namespace == "" {
				tc.req.Pod.Namespace = "team-a"
			}
			res, err := d.Decide(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != tc.allowed || !res.Effective.Equal(tc.effective) {
				t.Fatalf("allowed %v, effective %s; want %v, %s (denials %q)", res.Allowed, res.Effective, tc.allowed, tc.effective, res.Denials)
			}
			all := strings.Join(append(res.Denials, res.Warnings...), "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("%q not in %q", w, all)
				}
			}
			if tc.req.Claim != nil && captured.last != nil {
				if v, err := captured.last.Find(ast.MustParseRef("x.claim.name")[1:]); err != nil || v.String() != `"`+tc.req.Claim.Name+`"` {
					t.Errorf("input.claim.name = %v (%v)", v, err)
				}
			}
		})
	}
}

// initOnly moves the pod's container's claim to an init container.
func initOnly(p *corev1.Pod) *corev1.Pod {
	p.Spec.InitContainers = []corev1.Container{{Name: "fetch", Image: "registry.example/fetch:1", Resources: p.Spec.Containers[0].Resources}}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	return p
}

// countingSnap counts the inventory reads (a claim's demand, its CEL
// selectors, starts with one).
type countingSnap struct {
	*ledger.Ledger
	inventories atomic.Int64
}

func (s *countingSnap) Inventory() *dra.Inventory {
	s.inventories.Add(1)
	return s.Ledger.Inventory()
}

// TestClaimReviewUnknownNamespaceRunsNoCEL: a claim review for a namespace
// the watch has not reported fails as a pod's does, before the claim's
// demand (its CEL selectors) is computed; a claim of an ungoverned class
// is allowed on names alone.
func TestClaimReviewUnknownNamespaceRunsNoCEL(t *testing.T) {
	_, l := claimDecider(t, loadedEngine(t), nil)
	snap := &countingSnap{Ledger: l}
	d, err := New(loadedEngine(t), snap, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = d.Decide(ctx, Request{Claim: testclaim.HAMiDRA("forged-ns", "c", 1, 8192, 0)})
	if !errors.Is(err, ErrNamespaceUnknown) || snap.inventories.Load() != 0 {
		t.Fatalf("err %v, %d inventory reads; want ErrNamespaceUnknown before any", err, snap.inventories.Load())
	}
	fpga := testclaim.HAMiDRA("forged-ns", "fpga", 1, 1, 0)
	fpga.Spec.Devices.Requests[0].Exactly.DeviceClassName = "fpga.example.com"
	if res, err := d.Decide(ctx, Request{Claim: fpga}); err != nil || !res.Allowed || snap.inventories.Load() != 0 {
		t.Fatalf("ungoverned claim: %+v, %v, %d inventory reads", res, err, snap.inventories.Load())
	}
	if _, err := d.Decide(context.Background(), Request{Claim: testclaim.HAMiDRA("team-a", "c", 1, 8192, 0)}); err != nil || snap.inventories.Load() == 0 {
		t.Fatalf("a known namespace: %v, %d inventory reads (the counter counts nothing?)", err, snap.inventories.Load())
	}
}

// TestPodReservesItsContainersOnly: a pod with a template is checked with
// its template's claim but reserves its containers' demand alone (the
// claim reserves at its own CREATE); a template-only pod reserves nothing.
func TestPodReservesItsContainersOnly(t *testing.T) {
	d, _ := claimDecider(t, loadedEngine(t), nil)
	p := testclaim.TemplatePod("team-a", "p", "gpu-10g")
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse("4096")}
	res, err := d.Decide(context.Background(), Request{Pod: p})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Allowed || res.Effective.Of("nvidia").MemMiB != 14336 || res.Reserve.Of("nvidia").MemMiB != 4096 {
		t.Fatalf("allowed %v, checked %s, reserved %s; want 14336 MiB checked, 4096 reserved", res.Allowed, res.Effective, res.Reserve)
	}
	big := p.DeepCopy()
	big.Spec.Containers[0].Resources.Limits["nvidia.com/gpumem"] = resource.MustParse("8192")
	if res, err := d.Decide(context.Background(), Request{Pod: big}); err != nil || res.Allowed {
		t.Fatalf("8192 MiB + the template's 10240 into 16384: allowed %v (%v)", res.Allowed, err)
	}
	only := testclaim.TemplatePod("team-a", "q", "gpu-10g")
	if res, err := d.Decide(context.Background(), Request{Pod: only}); err != nil || !res.Allowed || !res.Reserve.IsZero() {
		t.Fatalf("template-only pod: %+v, %v; want allowed, nothing reserved", res, err)
	}
}
