package ledger

import (
	"slices"
)

// quotaView is what a namespace's quotas give each of its snapshots. It is
// built under the write lock whenever one of the quotas changes, never
// changed after, and shared, read only, by every snapshot taken until the
// next change replaces it: a decision reads the limits without copying
// them (NamespaceSnapshot says which fields are shared).
type quotaView struct {
	// limits are, per family, the tightest limit per dimension over the
	// quotas without scopes.
	limits map[string]Limits
	// quotas are every quota, sorted by name; native their "quota: key"
	// native requests keys; problems their problems, in that order.
	quotas   []QuotaSnapshot
	native   []string
	problems []Problem
	// scoped are the quotas with scopes, by name: a snapshot sums their
	// usage (scoped.go).
	scoped []*quota
}

// quotaView builds n's view of its quotas (nil: none). Ties on a limit go
// to an invalid limit, then to the first quota by name; a scoped quota's
// limits are its own, with its own usage (scoped.go).
func (n *namespace) quotaView() *quotaView {
	if len(n.quotas) == 0 {
		return nil
	}
	names := n.quotaNames()
	v := &quotaView{quotas: make([]QuotaSnapshot, 0, len(names))}
	var tightest map[string]Limits
	for _, name := range names {
		q := n.quotas[name]
		v.quotas = append(v.quotas, QuotaSnapshot{Name: name, Limits: cloneLimits(q.limits), NativeRequests: slices.Clone(q.native), Scopes: q.scope.describe()})
		v.problems = append(v.problems, q.problems...)
		for _, k := range q.native {
			v.native = append(v.native, name+": "+k)
		}
		if q.scope != nil {
			v.scoped = append(v.scoped, q)
			continue
		}
		for f, ql := range q.limits {
			if tightest == nil {
				tightest = map[string]Limits{}
			}
			cur := tightest[f]
			tightest[f] = Limits{GPU: tighter(cur.GPU, ql.GPU), MemMiB: tighter(cur.MemMiB, ql.MemMiB), Cores: tighter(cur.Cores, ql.Cores)}
		}
	}
	v.limits = cloneLimits(tightest)
	return v
}
