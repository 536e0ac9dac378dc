package admission

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// decisionSeries gathers gpuadmit_admission_decisions_total of reg, keyed
// "webhook/verdict/reason/namespace".
func decisionSeries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "gpuadmit_admission_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out[strings.Join([]string{l["webhook"], l["verdict"], l["reason"], l["namespace"]}, "/")] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestDecisionReasons: each answer counts once under its webhook, verdict,
// reason and the review's namespace; denials split into quota (a limit
// passed), policy (another rule) and invalid (the request).
func TestDecisionReasons(t *testing.T) {
	gpuPod := testpod.New("p").NS("team-a").UID("uid-p").App("c", testpod.GPU(1), testpod.Mem(1024)).Build()
	gpuEff := effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1024})
	claim := testclaim.HAMiDRA("team-c", "c", 1, 1024, 0)
	overQuota := decision.Result{Effective: gpuEff, Denials: []string{"over the limit"},
		Exceeded: []decision.LimitCheck{{Resource: "nvidia.com/gpumem", Pod: 1024, After: 2048, Limit: 1024, Quota: "q", Exceeded: true}}}
	byPolicy := decision.Result{Effective: gpuEff, Denials: []string{"GPU pods need a team label"}}
	invalid := decision.Result{Invalid: true, Denials: []string{`nvidia.com/gpu "1500m": must be a whole number`}}
	notReady := gateFunc(func() error { return errors.New("the watches have not synced") })
	validator := func(r Reserver, g Gate, m *Metrics) admission.Handler {
		return &Validator{Gate: g, GPUPods: &quotaDecider{}, Reserver: r, Metrics: m}
	}
	for _, tc := range []struct {
		name    string
		handler func(Reserver, Gate, *Metrics) admission.Handler
		req     admission.Request
		reserve Reserver
		gate    Gate
		want    string
	}{
		{name: "a quota denial", handler: validator, req: review(t, admissionv1.Create, gpuPod, false),
			reserve: fixedReserver{verdict: overQuota}, want: "validate/denied/quota/team-a"},
		{name: "a custom policy's denial", handler: validator, req: review(t, admissionv1.Create, gpuPod, false),
			reserve: fixedReserver{verdict: byPolicy}, want: "validate/denied/policy/team-a"},
		{name: "an invalid request", handler: validator, req: review(t, admissionv1.Create, gpuPod, false),
			reserve: fixedReserver{verdict: invalid}, want: "validate/denied/invalid/team-a"},
		{name: "allowed and reserved", handler: validator, req: review(t, admissionv1.Create, gpuPod, false),
			reserve: fixedReserver{verdict: decision.Result{Allowed: true, Effective: gpuEff}}, want: "validate/allowed/gpu/team-a"},
		{name: "a dry run", handler: validator, req: review(t, admissionv1.Create, gpuPod, true),
			reserve: fixedReserver{verdict: decision.Result{Allowed: true, Effective: gpuEff}}, want: "validate/allowed/dry-run/team-a"},
		{name: "a non-GPU pod", handler: validator,
			req:  review(t, admissionv1.Create, testpod.New("web").NS("team-b").App("c", testpod.CPU("1")).Build(), false),
			want: "validate/allowed/non-gpu/team-b"},
		{name: "not ready", handler: validator, req: review(t, admissionv1.Create, gpuPod, false), gate: notReady,
			want: "validate/error/not-ready/team-a"},
		{name: "no decision", handler: validator, req: review(t, admissionv1.Create, gpuPod, false),
			reserve: fixedReserver{err: errors.New("the API server is unreachable")}, want: "validate/error/error/team-a"},
		{name: "mutate: an invalid request is left to validation", handler: mutator,
			req:  review(t, admissionv1.Create, testpod.New("bad").NS("team-a").App("c", testpod.Res(testpod.MemName, "1.5")).Build(), false),
			want: "mutate/allowed/invalid/team-a"},
		{name: "mutate: annotated", handler: mutator, req: review(t, admissionv1.Create, gpuPod, false), want: "mutate/allowed/gpu/team-a"},
		{name: "claims: a quota denial", handler: claimValidator, req: claimReview(t, admissionv1.Create, claim, "ResourceClaim", "r1"),
			reserve: fixedReserver{verdict: overQuota}, want: "validate-claims/denied/quota/team-c"},
		{name: "claims: a custom policy's denial", handler: claimValidator, req: claimReview(t, admissionv1.Create, claim, "ResourceClaim", "r1"),
			reserve: fixedReserver{verdict: byPolicy}, want: "validate-claims/denied/policy/team-c"},
		{name: "a review without a namespace", handler: validator, req: withNamespace(review(t, admissionv1.Create, gpuPod, false), ""),
			reserve: fixedReserver{verdict: overQuota}, want: "validate/denied/quota/"},
		{name: "a review whose namespace no namespace can have", handler: validator,
			req: withNamespace(review(t, admissionv1.Create, gpuPod, false), "Not_A_Namespace"), reserve: fixedReserver{verdict: overQuota},
			want: "validate/denied/quota/" + OtherNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			tc.handler(tc.reserve, tc.gate, m).Handle(t.Context(), tc.req)
			got := decisionSeries(t, reg)
			if len(got) != 1 || got[tc.want] != 1 {
				t.Errorf("decisions %v, want {%s} = 1 only", got, tc.want)
			}
		})
	}
}

func mutator(_ Reserver, g Gate, m *Metrics) admission.Handler {
	return &Mutator{Gate: g, Demand: computeDemand{}, Metrics: m}
}

func claimValidator(r Reserver, g Gate, m *Metrics) admission.Handler {
	return &ClaimValidator{Gate: g, Claims: governsHAMi{}, Reserver: r, Metrics: m}
}

func withNamespace(req admission.Request, ns string) admission.Request {
	req.Namespace = ns
	return req
}

// TestDecisionNamespacesBounded floods the counter with more namespaces than
// MaxNamespaceLabels: the first ones keep their names (also when they come
// back after the bound is reached), every later one counts as _other, so
// the label never has more than MaxNamespaceLabels + 1 values.
func TestDecisionNamespacesBounded(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	v := &Validator{GPUPods: &quotaDecider{}, Reserver: fixedReserver{}, Metrics: m}
	const flood = MaxNamespaceLabels + 50
	for i := range flood {
		pod := testpod.New("web").NS(fmt.Sprintf("ns-%03d", i)).App("c", testpod.CPU("1")).Build()
		v.Handle(t.Context(), review(t, admissionv1.Create, pod, false))
	}
	first := testpod.New("web").NS("ns-000").App("c", testpod.CPU("1")).Build()
	v.Handle(t.Context(), review(t, admissionv1.Create, first, false))

	got := decisionSeries(t, reg)
	want := map[string]float64{"validate/allowed/non-gpu/" + OtherNamespace: flood - MaxNamespaceLabels}
	for i := range MaxNamespaceLabels {
		want[fmt.Sprintf("validate/allowed/non-gpu/ns-%03d", i)] = 1
	}
	want["validate/allowed/non-gpu/ns-000"] = 2
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("{%s} = %v, want %v", k, got[k], want[k])
		}
	}
	if n := testutil.CollectAndCount(m.decisions); n != MaxNamespaceLabels+1 || len(got) != n {
		t.Errorf("%d series (%d gathered), want %d: the namespaces and %s", n, len(got), MaxNamespaceLabels+1, OtherNamespace)
	}
}
