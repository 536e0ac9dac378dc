package decision_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// scopedQuota is a quota of gpus nvidia.com/gpu in team-a with scopes and
// a scope selector's expressions.
func scopedQuota(name, gpus string, scopes []corev1.ResourceQuotaScope, exprs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
	q := testquota.New("team-a", name, map[string]string{"limits.nvidia.com/gpu": gpus})
	q.Spec.Scopes = scopes
	if len(exprs) > 0 {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
	}
	return q
}

func priority(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
	return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
}

// gpuPod is a one-GPU pod of team-a; the options shape what scopes read.
type podOpt func(*corev1.Pod)

func gpuPod(name string, opts ...podOpt) *corev1.Pod {
	p := testpod.New(name).NS("team-a").App("c", testpod.GPU(1), testpod.Mem(1024)).Build()
	for _, o := range opts {
		o(p)
	}
	return p
}

func prio(pc string) podOpt { return func(p *corev1.Pod) { p.Spec.PriorityClassName = pc } }

func deadline(s int64) podOpt {
	return func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(s) }
}

// burstable gives the pod a cpu limit: no longer BestEffort.
func burstable(p *corev1.Pod) { testpod.CPU("1")(&p.Spec.Containers[0]) }

func crossNS(p *corev1.Pod) {
	p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: "zone", NamespaceSelector: &metav1.LabelSelector{}}}}}
}

// recorded is the pod as the API server stores it (and the watch delivers
// it): status.qosClass set at creation from cpu and memory (a cpu limit
// makes the pods here Burstable).
func recorded(p *corev1.Pod) *corev1.Pod {
	r := p.DeepCopy()
	r.Status.QOSClass = corev1.PodQOSBestEffort
	for _, c := range r.Spec.Containers {
		if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			r.Status.QOSClass = corev1.PodQOSBurstable
		}
	}
	return r
}

type admission struct {
	pod     *corev1.Pod
	allowed bool
}

// TestScopedQuotas admits pods one after the other, recording each one
// admitted as the watch would: a scoped quota counts and limits only the
// pods in its scopes (as the in-tree quota admission), every quota's limit
// holds after every step, and a pod outside a quota's scopes is never
// denied by it however much the namespace uses.
func TestScopedQuotas(t *testing.T) {
	e := engine(t)
	none := []corev1.ResourceQuotaScope(nil)
	high := scopedQuota("high", "1", none, priority(corev1.ScopeSelectorOpIn, "high"))
	ok, no := true, false
	tests := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		steps  []admission
	}{
		{"PriorityClass In: low pods pass, the second high pod is denied", []*corev1.ResourceQuota{high}, []admission{
			{gpuPod("low-1", prio("low")), ok}, {gpuPod("low-2", prio("low")), ok}, {gpuPod("none-1"), ok},
			{gpuPod("high-1", prio("high")), ok}, {gpuPod("high-2", prio("high")), no}, {gpuPod("low-3", prio("low")), ok}}},
		{"PriorityClass NotIn: a pod without a class is in it", []*corev1.ResourceQuota{scopedQuota("not-high", "1", none, priority(corev1.ScopeSelectorOpNotIn, "high"))}, []admission{
			{gpuPod("high-1", prio("high")), ok}, {gpuPod("high-2", prio("high")), ok}, {gpuPod("low-1", prio("low")), ok},
			{gpuPod("none-1"), no}, {gpuPod("low-2", prio("low")), no}}},
		{"PriorityClass Exists", []*corev1.ResourceQuota{scopedQuota("any-class", "1", none, priority(corev1.ScopeSelectorOpExists))}, []admission{
			{gpuPod("none-1"), ok}, {gpuPod("none-2"), ok}, {gpuPod("high-1", prio("high")), ok}, {gpuPod("low-1", prio("low")), no}}},
		{"PriorityClass in spec.scopes reads as Exists", []*corev1.ResourceQuota{scopedQuota("any-class", "1", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopePriorityClass})}, []admission{
			{gpuPod("none-1"), ok}, {gpuPod("high-1", prio("high")), ok}, {gpuPod("low-1", prio("low")), no}}},
		{"PriorityClass DoesNotExist", []*corev1.ResourceQuota{scopedQuota("no-class", "1", none, priority(corev1.ScopeSelectorOpDoesNotExist))}, []admission{
			{gpuPod("high-1", prio("high")), ok}, {gpuPod("high-2", prio("high")), ok}, {gpuPod("none-1"), ok}, {gpuPod("none-2"), no}}},
		{"BestEffort: a pod asking only for GPUs is BestEffort", []*corev1.ResourceQuota{scopedQuota("be", "1", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort})}, []admission{
			{gpuPod("burst-1", burstable), ok}, {gpuPod("be-1"), ok}, {gpuPod("be-2"), no}, {gpuPod("burst-2", burstable), ok}}},
		{"NotBestEffort", []*corev1.ResourceQuota{scopedQuota("nbe", "1", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort})}, []admission{
			{gpuPod("be-1"), ok}, {gpuPod("burst-1", burstable), ok}, {gpuPod("burst-2", burstable), no}, {gpuPod("be-2"), ok}}},
		{"Terminating", []*corev1.ResourceQuota{scopedQuota("term", "1", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating})}, []admission{
			{gpuPod("long-1"), ok}, {gpuPod("job-1", deadline(0)), ok}, {gpuPod("job-2", deadline(3600)), no}, {gpuPod("long-2"), ok}}},
		{"NotTerminating", []*corev1.ResourceQuota{scopedQuota("long", "1", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating})}, []admission{
			{gpuPod("job-1", deadline(60)), ok}, {gpuPod("long-1"), ok}, {gpuPod("long-2"), no}, {gpuPod("job-2", deadline(60)), ok}}},
		{"CrossNamespacePodAffinity", []*corev1.ResourceQuota{scopedQuota("cross", "1", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity})}, []admission{
			{gpuPod("plain-1"), ok}, {gpuPod("cross-1", crossNS), ok}, {gpuPod("cross-2", crossNS), no}, {gpuPod("plain-2"), ok}}},
		{"scopes and selector expressions are ANDed", []*corev1.ResourceQuota{scopedQuota("high-long", "1", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}, priority(corev1.ScopeSelectorOpIn, "high"))}, []admission{
			{gpuPod("high-job-1", prio("high"), deadline(60)), ok}, {gpuPod("high-job-2", prio("high"), deadline(60)), ok},
			{gpuPod("high-1", prio("high")), ok}, {gpuPod("high-2", prio("high")), no}, {gpuPod("low-1", prio("low")), ok}}},
		{"a quota without scopes and a scoped one: each pod meets every quota it is in", []*corev1.ResourceQuota{high,
			testquota.New("team-a", "all", map[string]string{"limits.nvidia.com/gpu": "3"})}, []admission{
			{gpuPod("high-1", prio("high")), ok}, {gpuPod("high-2", prio("high")), no}, {gpuPod("low-1", prio("low")), ok},
			{gpuPod("low-2", prio("low")), ok}, {gpuPod("low-3", prio("low")), no}, {gpuPod("high-3", prio("high")), no}}},
		{"two scoped quotas over the same pods: the tighter holds", []*corev1.ResourceQuota{high,
			scopedQuota("classed", "2", none, priority(corev1.ScopeSelectorOpExists))}, []admission{
			{gpuPod("low-1", prio("low")), ok}, {gpuPod("high-1", prio("high")), ok}, {gpuPod("low-2", prio("low")), no}, {gpuPod("none-1"), ok}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, d := scopedDecider(t, e, tt.quotas...)
			for i, s := range tt.steps {
				got, err := d.Decide(context.Background(), decision.Request{Pod: s.pod})
				if err != nil {
					t.Fatal(err)
				}
				if got.Allowed != s.allowed {
					t.Fatalf("step %d, pod %s: allowed %v, want %v (%q)", i, s.pod.Name, got.Allowed, s.allowed, got.Denials)
				}
				if got.Allowed {
					l.UpsertPod(recorded(s.pod))
				} else if !strings.Contains(strings.Join(got.Denials, "\n"), "ResourceQuota") {
					t.Fatalf("step %d: denied for another reason: %q", i, got.Denials)
				}
				assertWithinLimits(t, l)
			}
		})
	}
}

// scopedDecider is a ledger holding quotas and a decider on it.
func scopedDecider(t *testing.T, e decision.Evaluator, quotas ...*corev1.ResourceQuota) (*ledger.Ledger, *decision.Decider) {
	t.Helper()
	l := newLedger()
	testns.Known(l, "team-a")
	for _, q := range quotas {
		l.UpsertQuota(q)
	}
	d, err := decision.New(e, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return l, d
}

// assertWithinLimits: no limit of team-a, scoped or not, is passed.
func assertWithinLimits(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	s := l.Namespace("team-a", nil)
	if over := ledger.OverLimits(s, l.Families()); len(over) > 0 {
		t.Fatalf("over a limit: %v", over)
	}
}

// TestScopedQuotaCountsEveryReservation: a reservation does not say which
// scopes its pod is in, so it counts against every scoped quota (never
// under-counted), and the denial says so; a pod outside the quota's
// scopes is not held back by it.
func TestScopedQuotaCountsEveryReservation(t *testing.T) {
	e := engine(t)
	_, d := scopedDecider(t, e, scopedQuota("high", "1", nil, priority(corev1.ScopeSelectorOpIn, "high")))
	res := []reservation.Reservation{{UID: "uid-r", Name: "r", Demand: nv(1, 0, 0)}}
	got, err := d.Decide(context.Background(), decision.Request{Pod: gpuPod("high-1", prio("high")), Reservations: res})
	if err != nil {
		t.Fatal(err)
	}
	want := `namespace "team-a": nvidia.com/gpu: pod needs 1, 0 used by the pods in the scopes of ResourceQuota "high" (PriorityClass In (high)) + 1 reserved, limit 1 (limits.nvidia.com/gpu)`
	if got.Allowed || len(got.Denials) != 1 || got.Denials[0] != want {
		t.Fatalf("got allowed %v %q, want the denial %q", got.Allowed, got.Denials, want)
	}
	if len(got.Exceeded) != 1 || got.Exceeded[0].Quota != "high" || got.Exceeded[0].Used != 0 || got.Exceeded[0].Reserved != 1 {
		t.Errorf("Exceeded = %+v, want the scoped quota's limit with its own usage", got.Exceeded)
	}
	if got, _ := d.Decide(context.Background(), decision.Request{Pod: gpuPod("low-1", prio("low")), Reservations: res}); !got.Allowed {
		t.Errorf("a low pod denied by the high quota: %q", got.Denials)
	}
}

// TestScopedQuotaExplained: an explanation lists the limits that apply to
// the pod (a scoped quota's with its own usage), not those of scoped
// quotas it is not in.
func TestScopedQuotaExplained(t *testing.T) {
	e := engine(t)
	l, d := scopedDecider(t, e, scopedQuota("high", "1", nil, priority(corev1.ScopeSelectorOpIn, "high")),
		testquota.New("team-a", "all", map[string]string{"limits.nvidia.com/gpu": "8"}))
	for i := range 3 {
		l.UpsertPod(recorded(gpuPod(fmt.Sprint("low-", i), prio("low"))))
	}
	for _, tt := range []struct {
		pod    *corev1.Pod
		quotas []string
	}{
		{gpuPod("high-1", prio("high")), []string{"all 3", "high 0"}},
		{gpuPod("low-9", prio("low")), []string{"all 3"}},
	} {
		got, err := d.Decide(context.Background(), decision.Request{Pod: tt.pod, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		var quotas []string
		for _, c := range got.Explanation.Limits {
			quotas = append(quotas, fmt.Sprint(c.Quota, " ", c.Used))
		}
		if strings.Join(quotas, ",") != strings.Join(tt.quotas, ",") {
			t.Errorf("pod %s: limits explained %v, want %v", tt.pod.Name, quotas, tt.quotas)
		}
	}
}
