package decision

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// A ResourceQuota with scopes limits, and counts, only the pods it matches
// (ledger.ScopedQuota): the policy input shows the ones the pod is in, each
// against what its own pods use.

// scopedTerm is input.namespaceUsage.scopedLimits, every family's in one
// list (empty, the usual case, it lets the rules reading it be skipped by
// OPA's rule index): each limited dimension of each scoped quota the pod
// is in, quota by quota, family by family of fams, with what the quota's
// pods use, the namespace's reservations (a reservation's scopes are
// unknown: it counts against every scoped quota) and after = used +
// reserved + the pod.
func (d *inputDoc) scopedTerm(b *builder, fams []string) *ast.Term {
	if len(d.scoped) == 0 {
		return b.array()
	}
	var items []*ast.Term
	eff := d.effUsage()
	for _, q := range d.scoped {
		scopes := make([]*ast.Term, len(q.Scopes))
		for i, s := range q.Scopes {
			scopes[i] = b.str(s)
		}
		for _, f := range fams {
			lim, ok := q.Limits[f]
			if !ok {
				continue
			}
			used, reserved := q.Used.Of(f), d.ns.Reserved.Of(f)
			after := sum(used, reserved, eff.Of(f))
			for _, dim := range effective.Dimensions() {
				if l := lim.Of(dim); l != nil {
					a := after.Get(dim)
					items = append(items, b.object(b.item("family", b.str(f)), b.item("dimension", b.str(dimKey(dim))),
						b.item("value", b.num(l.Value)), b.item("quota", b.str(l.Quota)), b.item("key", b.str(l.Key)),
						b.item("invalid", ast.InternedTerm(l.Invalid)), b.item("scopes", b.array(scopes...)),
						b.item("used", b.num(used.Get(dim))), b.item("reserved", b.num(reserved.Get(dim))),
						b.item("after", b.num(a)), b.item("afterPercent", b.num(effective.Percent(a, l.Value)))))
				}
			}
		}
	}
	return b.array(items...)
}

// scopedOf are the scoped quotas of ns that pod is in.
func scopedOf(ns *ledger.NamespaceSnapshot, pod *corev1.Pod) []*ledger.ScopedQuota {
	var out []*ledger.ScopedQuota
	for i := range ns.Scoped {
		if ns.Scoped[i].Matches(pod) {
			out = append(out, &ns.Scoped[i])
		}
	}
	return out
}
