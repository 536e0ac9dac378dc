package ledger

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// ResourceQuota scopes (spec.scopes, spec.scopeSelector) are matched as the
// in-tree quota admission's pod evaluator matches them (k8s.io/kubernetes
// pkg/quota/v1/evaluator/core, podMatchesScopeFunc; the scopes and the
// selector's expressions are ANDed as k8s.io/apiserver's generic.Matches
// does). That code lives only in k8s.io/kubernetes, which gpuadmit does not
// import: this is its port, case by case (scope_test.go cites them).
//
//	Terminating / NotTerminating   spec.activeDeadlineSeconds >= 0 set / not
//	BestEffort / NotBestEffort     the pod's QoS class (GetPodQOS: status.qosClass,
//	                               written by the API server at creation and
//	                               immutable, else computed from cpu and memory;
//	                               a recorded pod without it counts as both)
//	PriorityClass                  In / NotIn / Exists / DoesNotExist on
//	                               spec.priorityClassName, as a label selector
//	CrossNamespacePodAffinity      a pod (anti-)affinity term naming namespaces
//	                               or a namespace selector
//	any other scope                matches no pod
//
// A pod's scope attributes are kept with its record (podScope) and a
// namespace's usage is kept per distinct attributes (namespace.byScope), so
// a scoped quota's usage is a sum over a handful of buckets, whatever the
// number of pods. Of the attributes only Terminating can change after
// creation (activeDeadlineSeconds may be set, or lowered, on a running
// pod); the record keeps the attributes of its first event too and a pod
// counts against every scoped quota either matches: moving into a scope
// never takes a pod out of the one it was admitted under.

// scopeFlags are the boolean scope attributes of a pod.
type scopeFlags uint8

const (
	flagTerminating scopeFlags = 1 << iota
	flagBestEffort
	flagCrossNamespace
	// flagQOSUnknown: a recorded pod without status.qosClass (the API
	// server sets it on every pod it creates; the ledger keeps no cpu or
	// memory to compute it): it counts as BestEffort and as NotBestEffort.
	flagQOSUnknown
)

// podScope is what ResourceQuota scopes read of a pod: its priority class,
// its attributes now and at its first record (the same for a new pod).
type podScope struct {
	priorityClass string
	now, first    scopeFlags
}

// scopeOf reads the scope attributes of a recorded pod: its QoS class is
// status.qosClass (the slimmed pod has no cpu or memory to compute it).
func scopeOf(pod *corev1.Pod) podScope {
	return scopeWith(pod, pod.Status.QOSClass)
}

// admittedScope reads the scope attributes of a pod being admitted, whole:
// its QoS class is GetPodQOS's.
func admittedScope(pod *corev1.Pod) podScope {
	return scopeWith(pod, podQOS(pod))
}

func scopeWith(pod *corev1.Pod, qos corev1.PodQOSClass) podScope {
	var f scopeFlags
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d >= 0 {
		f |= flagTerminating
	}
	switch qos {
	case corev1.PodQOSBestEffort:
		f |= flagBestEffort
	case "":
		f |= flagQOSUnknown
	}
	if effective.CrossNamespaceAffinity(pod.Spec.Affinity) {
		f |= flagCrossNamespace
	}
	return podScope{priorityClass: pod.Spec.PriorityClassName, now: f, first: f}
}

// inheritScope keeps, in a pod's new record, the scope attributes of its
// first one (old: the record it replaces; nil for a new pod).
func inheritScope(rec, old *podRecord) {
	if rec != nil && old != nil {
		rec.scope.first = old.scope.first
	}
}

// podQOS is the in-tree qos.GetPodQOS (pkg/apis/core/v1/helper/qos) with
// the feature gates of Kubernetes 1.37's defaults (PodLevelResources and
// PodLevelResourcesFixKubeletQOSClass on): status.qosClass when set, else
// ComputePodQOS.
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var podQOS corev1.PodQOSClass
	for _, cs := range [2][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := requirementsQOS(&cs[i].Resources)
			switch {
			case c == corev1.PodQOSBurstable:
				return c
			case podQOS == "":
				podQOS = c
			case podQOS != c:
				return corev1.PodQOSBurstable
			}
		}
	}
	if podQOS == "" {
		podQOS = corev1.PodQOSBestEffort
	}
	return podQOS
}

// requirementsQOS is the in-tree requirementsQOS: the class of one set of
// requirements, from cpu and memory only (a GPU-only container is
// BestEffort).
func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var qos corev1.PodQOSClass
	for _, res := range [2]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[res], r.Limits[res]
		var c corev1.PodQOSClass
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			c = corev1.PodQOSBestEffort
		default:
			c = corev1.PodQOSGuaranteed
		}
		switch {
		case qos == "":
			qos = c
		case qos != c:
			return corev1.PodQOSBurstable
		}
	}
	return qos
}

// quotaScope is a ResourceQuota's scopes and scopeSelector, parsed once.
type quotaScope struct {
	reqs []scopeRequirement
	// invalid: a requirement could not be parsed (an operator or values
	// the API server's validation refuses; a quota read from a file may
	// have them). The in-tree evaluator fails every admission of the
	// namespace then; the quota limits every pod instead.
	invalid bool
}

// scopeRequirement is one requirement: a scope of spec.scopes reads as
// the scope with operator Exists (generic.Matches).
type scopeRequirement struct {
	corev1.ScopedResourceSelectorRequirement
	// selector is a PriorityClass requirement's label selector.
	selector labels.Selector
}

// parseScope reads rq's scopes (nil: the quota is not scoped) and the
// problems of the requirements that cannot be read.
func parseScope(rq *corev1.ResourceQuota) (*quotaScope, []Problem) {
	var all []corev1.ScopedResourceSelectorRequirement
	for _, s := range rq.Spec.Scopes {
		all = append(all, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if sel := rq.Spec.ScopeSelector; sel != nil {
		all = append(all, sel.MatchExpressions...)
	}
	if len(all) == 0 {
		return nil, nil
	}
	q := &quotaScope{}
	var problems []Problem
	for _, r := range all {
		sr := scopeRequirement{ScopedResourceSelectorRequirement: *r.DeepCopy()}
		if r.ScopeName == corev1.ResourceQuotaScopePriorityClass && r.Operator != corev1.ScopeSelectorOpExists {
			sel, err := scopeSelector(r)
			if err != nil {
				q.invalid = true
				problems = append(problems, Problem{Kind: ProblemQuota, Namespace: rq.Namespace, Name: rq.Name,
					Key: "spec.scopeSelector", Value: describeRequirement(r),
					Message: err.Error() + "; the quota limits every pod until it is fixed"})
			}
			sr.selector = sel
		}
		q.reqs = append(q.reqs, sr)
	}
	return q, problems
}

// scopeSelector is the in-tree ScopedResourceSelectorRequirementsAsSelector
// (pkg/apis/core/v1/helper).
func scopeSelector(r corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	var op selection.Operator
	switch r.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return nil, fmt.Errorf("%q is not a valid scope selector operator", r.Operator)
	}
	req, err := labels.NewRequirement(string(r.ScopeName), op, r.Values)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*req), nil
}

// matches reports whether a pod of priority class pc and attributes f
// matches every requirement (podMatchesScopeFunc, ANDed).
func (q *quotaScope) matches(pc string, f scopeFlags) bool {
	if q.invalid {
		return true
	}
	for i := range q.reqs {
		if !q.reqs[i].matches(pc, f) {
			return false
		}
	}
	return true
}

// matchesPod reports whether the pod counts against the quota: its
// attributes now or at its first record match.
func (q *quotaScope) matchesPod(s podScope) bool {
	return q.matches(s.priorityClass, s.now) || (s.first != s.now && q.matches(s.priorityClass, s.first))
}

func (r *scopeRequirement) matches(pc string, f scopeFlags) bool {
	switch r.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return f&flagTerminating != 0
	case corev1.ResourceQuotaScopeNotTerminating:
		return f&flagTerminating == 0
	case corev1.ResourceQuotaScopeBestEffort:
		return f&(flagBestEffort|flagQOSUnknown) != 0
	case corev1.ResourceQuotaScopeNotBestEffort:
		return f&flagBestEffort == 0
	case corev1.ResourceQuotaScopePriorityClass:
		if r.Operator == corev1.ScopeSelectorOpExists {
			return pc != ""
		}
		var set labels.Set
		if pc != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pc}
		}
		return r.selector.Matches(set)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return f&flagCrossNamespace != 0
	}
	return false
}

// describe is how the quota's scopes read in snapshots and messages, e.g.
// ["NotTerminating", "PriorityClass In (high)"].
func (q *quotaScope) describe() []string {
	if q == nil {
		return nil
	}
	out := make([]string, len(q.reqs))
	for i := range q.reqs {
		out[i] = describeRequirement(q.reqs[i].ScopedResourceSelectorRequirement)
	}
	return out
}

func describeRequirement(r corev1.ScopedResourceSelectorRequirement) string {
	if r.Operator == corev1.ScopeSelectorOpExists && r.ScopeName != corev1.ResourceQuotaScopePriorityClass {
		return string(r.ScopeName)
	}
	s := string(r.ScopeName) + " " + string(r.Operator)
	if len(r.Values) > 0 {
		s += " (" + strings.Join(r.Values, ", ") + ")"
	}
	return s
}
