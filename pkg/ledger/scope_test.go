package ledger

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestScopeMatchesInTree is the port's table: the cases of the in-tree
// pod evaluator's podMatchesScopeFunc and qos.ComputePodQOS
// (k8s.io/kubernetes pkg/quota/v1/evaluator/core/pods_test.go
// TestPodEvaluatorMatchingScopes, pkg/apis/core/v1/helper/qos), each
// scope against pods that are and are not in it.
func TestScopeMatchesInTree(t *testing.T) {
	cpu := func(req, lim string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		if req != "" {
			r.Requests[corev1.ResourceCPU] = resource.MustParse(req)
		}
		if lim != "" {
			r.Limits[corev1.ResourceCPU] = resource.MustParse(lim)
		}
		return r
	}
	gpuOnly := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	pod := func(f func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: gpuOnly}}}}
		if f != nil {
			f(p)
		}
		return p
	}
	exists := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	pc := func(op corev1.ScopeSelectorOperator, v ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: v}
	}
	high := pod(func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })
	cross := pod(func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "z", Namespaces: []string{"b"}}}}}}
	})
	sameNS := pod(func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "z"}}}}
	})
	tests := []struct {
		name string
		req  corev1.ScopedResourceSelectorRequirement
		in   []*corev1.Pod
		out  []*corev1.Pod
	}{
		{"Terminating: activeDeadlineSeconds >= 0", exists(corev1.ResourceQuotaScopeTerminating),
			[]*corev1.Pod{pod(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) }), pod(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) })},
			[]*corev1.Pod{pod(nil), pod(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](-1) })}},
		{"NotTerminating", exists(corev1.ResourceQuotaScopeNotTerminating),
			[]*corev1.Pod{pod(nil)}, []*corev1.Pod{pod(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) })}},
		{"BestEffort: no cpu or memory anywhere (GPUs do not count)", exists(corev1.ResourceQuotaScopeBestEffort),
			[]*corev1.Pod{pod(nil), pod(func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} })},
			[]*corev1.Pod{pod(func(p *corev1.Pod) { p.Spec.Containers[0].Resources = cpu("1", "") }),
				pod(func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Resources: cpu("1", "1")}} }),
				pod(func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Limits: cpu("", "2").Limits} }), // pod-level resources
				pod(func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed })}},                                // the API server's word wins
		{"NotBestEffort", exists(corev1.ResourceQuotaScopeNotBestEffort),
			[]*corev1.Pod{pod(func(p *corev1.Pod) { p.Spec.Containers[0].Resources = cpu("1", "2") })}, []*corev1.Pod{pod(nil)}},
		{"PriorityClass In", pc(corev1.ScopeSelectorOpIn, "high", "mid"), []*corev1.Pod{high}, []*corev1.Pod{pod(nil), pod(func(p *corev1.Pod) { p.Spec.PriorityClassName = "low" })}},
		{"PriorityClass NotIn: a pod without a class is in", pc(corev1.ScopeSelectorOpNotIn, "high"), []*corev1.Pod{pod(nil)}, []*corev1.Pod{high}},
		{"PriorityClass Exists", pc(corev1.ScopeSelectorOpExists), []*corev1.Pod{high}, []*corev1.Pod{pod(nil)}},
		{"PriorityClass DoesNotExist", pc(corev1.ScopeSelectorOpDoesNotExist), []*corev1.Pod{pod(nil)}, []*corev1.Pod{high}},
		{"CrossNamespacePodAffinity", exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), []*corev1.Pod{cross}, []*corev1.Pod{pod(nil), sameNS}},
		{"another scope matches no pod", exists("VolumeAttributesClass"), nil, []*corev1.Pod{pod(nil), high, cross}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
				Spec: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{tt.req}}}}
			s, problems := parseScope(rq)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			q := ScopedQuota{scope: s}
			for i, p := range tt.in {
				if !q.Matches(p) {
					t.Errorf("pod %d not in the scope, want in", i)
				}
			}
			for i, p := range tt.out {
				if q.Matches(p) {
					t.Errorf("pod %d in the scope, want out", i)
				}
			}
		})
	}
}

// TestScopeInvalidSelectorLimitsEveryPod: a requirement the API server
// would refuse (a quota read from a file) is a reported problem, and the
// quota then limits every pod (the in-tree evaluator fails every admission
// of the namespace): never fewer pods than it says.
func TestScopeInvalidSelectorLimitsEveryPod(t *testing.T) {
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: "Near", Values: []string{"high"}}}}}}
	s, problems := parseScope(rq)
	if len(problems) != 1 || problems[0].Kind != ProblemQuota {
		t.Fatalf("problems %v, want one quota problem", problems)
	}
	if q := (ScopedQuota{scope: s}); !q.Matches(&corev1.Pod{}) {
		t.Error("a quota with an unreadable scope does not limit a pod")
	}
}

// TestRecordedPodWithoutQOSClassCountsBoth: a recorded pod whose QoS
// class the API server did not write counts against BestEffort and
// NotBestEffort quotas alike (the slimmed pod has no cpu or memory).
func TestRecordedPodWithoutQOSClassCountsBoth(t *testing.T) {
	for _, scope := range []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort} {
		s, _ := parseScope(&corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{scope}}})
		if !s.matchesPod(scopeOf(&corev1.Pod{})) {
			t.Errorf("%s: a recorded pod of unknown QoS not counted", scope)
		}
	}
}
