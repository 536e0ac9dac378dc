package ledger

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// A ResourceQuota with scopes counts, as the in-tree quota does, only the
// pods that match its scopes, and limits only those (scope.go). The
// ledger keeps each namespace's pod usage per distinct scope attributes
// (a bucket per priority class and attributes: a handful per namespace),
// updated with every charge, so a scoped quota's usage is the sum of the
// buckets it matches: no pod is read at a decision, and a quota created or
// edited later counts the pods recorded before it.
//
// What a scoped quota counts and limits:
//
//   - pods (their extended-resource demand) that match it, now or at
//     their first record;
//   - not ResourceClaims, nor a pod's template claims charged under it: the
//     in-tree evaluator of claims matches no scope (generic.MatchesNoScopeFunc),
//     so a claim counts only against quotas without scopes;
//   - every counted reservation (Reserved): a reservation does not hold its
//     pod's spec, so which scope its pod is in is unknown, and counting it
//     against every scoped quota of the namespace can over-count for the
//     moment until the watch records the pod, never under-count.

// ScopedQuota is a ResourceQuota with scopes: its limits and what the
// recorded pods in its scopes use (reservations count in the namespace's
// Reserved, against every scoped quota). Memory is MiB.
type ScopedQuota struct {
	Name string `json:"name"`
	// Scopes describe spec.scopes and spec.scopeSelector, e.g.
	// "PriorityClass In (high)".
	Scopes []string          `json:"scopes"`
	Limits map[string]Limits `json:"limits"`
	// Used is the sum of the charges of the recorded pods that match it.
	Used  effective.Usage `json:"used"`
	scope *quotaScope
}

// Matches reports whether a pod being admitted is in the quota's scopes
// (the pod's attributes as the in-tree evaluator reads them).
func (q *ScopedQuota) Matches(pod *corev1.Pod) bool {
	return q.scope != nil && q.scope.matchesPod(admittedScope(pod))
}

// chargeScopedLocked adds r's charge to the bucket of its scope
// attributes in n (pod.go's chargeLocked, once n.used took it: no bucket
// sum exceeds n.used, so none overflows).
func chargeScopedLocked(n *namespace, r *podRecord) {
	if r.used.IsZero() {
		return
	}
	if n.byScope == nil {
		n.byScope = map[podScope]effective.Usage{}
	}
	n.byScope[r.scope], _ = n.byScope[r.scope].Add(r.used)
}

// unchargeScopedLocked subtracts what chargeScopedLocked added.
func (l *Ledger) unchargeScopedLocked(n *namespace, r *podRecord) {
	if r.used.IsZero() {
		return
	}
	u := l.nonNegativeUsage(n.byScope[r.scope].Sub(r.used), "namespace "+r.namespace+" scope bucket")
	if u.IsZero() {
		delete(n.byScope, r.scope)
		return
	}
	n.byScope[r.scope] = u
}

// scopedQuotas lists n's scoped quotas by name, each with the usage of
// the buckets it matches.
func (n *namespace) scopedQuotas() []ScopedQuota {
	if n.view == nil {
		return nil
	}
	var out []ScopedQuota
	for _, q := range n.view.scoped {
		name := q.name
		var used effective.Usage
		for s, u := range n.byScope {
			if q.scope.matchesPod(s) {
				used, _ = used.Add(u)
			}
		}
		out = append(out, ScopedQuota{Name: name, Scopes: q.scope.describe(), Limits: cloneLimits(q.limits), Used: used, scope: q.scope})
	}
	return out
}
