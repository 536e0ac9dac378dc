package ledger

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
)

// scopedRQ is a quota of ns with a GPU limit and the given scopes.
func scopedRQ(ns, name string, gpus int64, scopes []corev1.ResourceQuotaScope, exprs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}, Scopes: scopes}}
	if len(exprs) > 0 {
		rq.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
	}
	return rq
}

func inClasses(op corev1.ScopeSelectorOperator, v ...string) corev1.ScopedResourceSelectorRequirement {
	return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: v}
}

// scopedPod is a recorded GPU pod of ns (status.qosClass as the API server writes it).
func scopedPod(ns, name string, gpus int64, class string, deadline *int64, qos corev1.PodQOSClass) *corev1.Pod {
	p := testpod.New(name).NS(ns).App("c", gpu(gpus), mem(1024)).Build()
	p.Spec.PriorityClassName, p.Spec.ActiveDeadlineSeconds, p.Status.QOSClass = class, deadline, qos
	return p
}

// scopedUsed is what the snapshot says each scoped quota of ns uses.
func scopedUsed(l *Ledger, ns string) map[string]effective.Usage {
	out := map[string]effective.Usage{}
	for _, q := range l.Namespace(ns, nil).Scoped {
		out[q.Name] = q.Used
	}
	return out
}

// recountScoped sums, for each scoped quota of ns, the charges of the
// recorded pods it matches, pod by pod.
func recountScoped(l *Ledger, ns string) map[string]effective.Usage {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := map[string]effective.Usage{}
	n := l.namespaces[ns]
	if n == nil {
		return out
	}
	for name, q := range n.quotas {
		if q.scope == nil {
			continue
		}
		var sum effective.Usage
		for _, r := range l.pods {
			if r.namespace == ns && q.scope.matchesPod(r.scope) {
				sum, _ = sum.Add(r.used)
			}
		}
		out[name] = sum
	}
	return out
}

func equalUsages(a, b map[string]effective.Usage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !w.Equal(v) {
			return false
		}
	}
	return true
}

// TestScopedUsageEqualsRecount: through random creates, updates, ends and
// deletions of pods and quotas (created before or after the pods they
// count, their scopes edited), each scoped quota's usage equals the sum
// over the recorded pods it matches, and a ledger fed the final objects
// alone agrees.
func TestScopedUsageEqualsRecount(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	classes := []string{"", "low", "high"}
	quotas := []func(name string) *corev1.ResourceQuota{
		func(n string) *corev1.ResourceQuota {
			return scopedRQ("ns", n, 4, nil, inClasses(corev1.ScopeSelectorOpIn, "high"))
		},
		func(n string) *corev1.ResourceQuota {
			return scopedRQ("ns", n, 4, nil, inClasses(corev1.ScopeSelectorOpNotIn, "high"))
		},
		func(n string) *corev1.ResourceQuota {
			return scopedRQ("ns", n, 4, nil, inClasses(corev1.ScopeSelectorOpDoesNotExist))
		},
		func(n string) *corev1.ResourceQuota {
			return scopedRQ("ns", n, 4, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeBestEffort})
		},
		func(n string) *corev1.ResourceQuota {
			return scopedRQ("ns", n, 4, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}, inClasses(corev1.ScopeSelectorOpExists))
		},
		func(n string) *corev1.ResourceQuota { return scopedRQ("ns", n, 4, nil) }, // no scopes
	}
	l := newLedger(t)
	pods := map[string]*corev1.Pod{}
	rqs := map[string]*corev1.ResourceQuota{}
	for step := range 600 {
		name := fmt.Sprint("p", rng.IntN(40))
		switch op := rng.IntN(10); {
		case op < 5: // create (or recreate: a new UID) a pod
			var deadline *int64
			if rng.IntN(2) == 0 {
				deadline = ptr.To[int64](60)
			}
			qos := []corev1.PodQOSClass{corev1.PodQOSBestEffort, corev1.PodQOSBurstable}[rng.IntN(2)]
			p := scopedPod("ns", name, int64(1+rng.IntN(3)), classes[rng.IntN(3)], deadline, qos)
			p.UID += types.UID(fmt.Sprint("-", step))
			pods[name] = p
			l.UpsertPod(p)
		case op < 6: // the pod ends
			if p := pods[name]; p != nil {
				p = p.DeepCopy()
				p.Status.Phase = corev1.PodSucceeded
				pods[name] = p
				l.UpsertPod(p)
			}
		case op < 7:
			if p := pods[name]; p != nil {
				delete(pods, name)
				l.DeletePod(p)
			}
		case op < 9: // create or edit a quota (its scopes may change)
			qn := fmt.Sprint("q", rng.IntN(5))
			rqs[qn] = quotas[rng.IntN(len(quotas))](qn)
			l.UpsertQuota(rqs[qn])
		default:
			qn := fmt.Sprint("q", rng.IntN(5))
			delete(rqs, qn)
			l.DeleteQuota("ns", qn)
		}
		if got, want := scopedUsed(l, "ns"), recountScoped(l, "ns"); !equalUsages(got, want) {
			t.Fatalf("step %d: scoped usage %v, recount %v", step, got, want)
		}
	}
	fresh := newLedger(t)
	for _, p := range pods {
		fresh.UpsertPod(p)
	}
	for _, rq := range rqs {
		fresh.UpsertQuota(rq)
	}
	if got, want := scopedUsed(l, "ns"), scopedUsed(fresh, "ns"); !equalUsages(got, want) || len(got) == 0 {
		t.Fatalf("ledger %v, rebuilt from the final objects %v", got, want)
	}
}

// TestScopeNotEscapedByLaterEdits: activeDeadlineSeconds is the one scope
// attribute a running pod can change (set it, or lower it). A pod
// admitted under a NotTerminating quota that sets it keeps counting there
// (and counts against Terminating quotas too); its priority class, QoS and
// affinity are immutable, so re-reading them changes nothing.
func TestScopeNotEscapedByLaterEdits(t *testing.T) {
	l := newLedger(t)
	l.UpsertQuota(scopedRQ("ns", "long", 1, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}))
	l.UpsertQuota(scopedRQ("ns", "jobs", 1, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}))
	p := scopedPod("ns", "p", 1, "", nil, corev1.PodQOSBestEffort)
	l.UpsertPod(p)
	edited := p.DeepCopy()
	edited.Spec.ActiveDeadlineSeconds, edited.ResourceVersion = ptr.To[int64](1<<40), "2"
	l.UpsertPod(edited)
	got := scopedUsed(l, "ns")
	if got["long"].Of(nvidia).GPU != 1 || got["jobs"].Of(nvidia).GPU != 1 {
		t.Fatalf("after activeDeadlineSeconds was set: %v, want the pod in both quotas", got)
	}
	l.DeletePod(edited)
	if got := scopedUsed(l, "ns"); !got["long"].IsZero() || !got["jobs"].IsZero() {
		t.Fatalf("after the pod's deletion: %v, want nothing", got)
	}
}

// TestScopedQuotaCountsPodsRecordedBefore: a scoped quota created after
// the pods counts them, and one whose scopes are edited counts the pods of
// its new scopes; its limits are its own, apart from the namespace's
// tightest limits.
func TestScopedQuotaCountsPodsRecordedBefore(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(scopedPod("ns", "h", 2, "high", nil, corev1.PodQOSBestEffort))
	l.UpsertPod(scopedPod("ns", "l", 3, "low", nil, corev1.PodQOSBestEffort))
	l.UpsertQuota(scopedRQ("ns", "q", 1, nil, inClasses(corev1.ScopeSelectorOpIn, "high")))
	s := l.Namespace("ns", nil)
	if len(s.Scoped) != 1 || s.Scoped[0].Used.Of(nvidia).GPU != 2 || s.Limits != nil {
		t.Fatalf("scoped %+v, limits %v: want q using 2 GPUs and no namespace-wide limit", s.Scoped, s.Limits)
	}
	l.UpsertQuota(scopedRQ("ns", "q", 1, nil, inClasses(corev1.ScopeSelectorOpIn, "low")))
	if u := scopedUsed(l, "ns")["q"].Of(nvidia).GPU; u != 3 {
		t.Fatalf("after the scope was edited: %d GPUs, want 3", u)
	}
	over := OverLimits(l.Namespace("ns", nil), l.Families())
	if len(over) != 1 || over[0].Used != 3 || over[0].Limit != 1 || len(over[0].Scopes) != 1 {
		t.Fatalf("over limits %v, want q's limit against its own 3 GPUs", over)
	}
}

// TestQuotaTransformKeepsScopes: the informer's slimmed quota keeps its
// scopes and scope selector (dropping them would make it limit every pod).
func TestQuotaTransformKeepsScopes(t *testing.T) {
	rq := scopedRQ("ns", "q", 1, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}, inClasses(corev1.ScopeSelectorOpIn, "high"))
	out, err := feed.QuotaTransform(newLedger(t).Families())(rq)
	if err != nil {
		t.Fatal(err)
	}
	l := newLedger(t)
	l.UpsertQuota(out.(*corev1.ResourceQuota))
	s := l.Namespace("ns", nil)
	if len(s.Scoped) != 1 || len(s.Scoped[0].Scopes) != 2 || s.Limits != nil {
		t.Fatalf("after the transform: scoped %+v, limits %v", s.Scoped, s.Limits)
	}
}
