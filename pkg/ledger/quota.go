package ledger

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/quotacheck"
)

// quota is what one ResourceQuota says about the managed resources.
type quota struct {
	name string
	// limits are the family's limits, by family name (absent: none).
	limits map[string]Limits
	// native lists the spec.hard keys requests.<managed name>: native
	// ResourceQuota counts those per container, without init/app semantics.
	native   []string
	problems []Problem
	// scope is the quota's scopes and scopeSelector (nil: none); a scoped
	// quota counts and limits only the pods that match it (scope.go).
	scope *quotaScope
}

// UpsertQuota records the limits a ResourceQuota sets on managed resources:
// spec.hard keys limits.<count name>, limits.<memory name> (memory units,
// converted to MiB with memoryFactor) and limits.<cores name>. A memory
// value in bytes ("24Gi") and a value that is not whole are enforced
// rounded down and reported; a negative or overflowing value is reported
// and blocks its dimension (an invalid limit is never read as
// "unlimited"); a limits. key of a resource no governed family has is
// reported (quotacheck). Every quota of a
// namespace is kept on its own, so deleting one leaves the others in force.
func (l *Ledger) UpsertQuota(rq *corev1.ResourceQuota) {
	q := l.parseQuota(rq)
	l.mu.Lock()
	defer l.mu.Unlock()
	var before []Problem
	if n := l.namespaces[rq.Namespace]; n != nil && n.quotas[rq.Name] != nil {
		before = n.quotas[rq.Name].problems
	}
	if !slices.Equal(before, q.problems) { // log changes, not every status update of the quota
		for _, p := range q.problems {
			l.log.Info("ResourceQuota key not enforced as written", "quota", klog.KObj(rq),
				"key", p.Key, "value", p.Value, "problem", p.Message)
		}
	}
	if len(q.limits) == 0 && len(q.native) == 0 && len(q.problems) == 0 {
		l.deleteQuotaLocked(rq.Namespace, rq.Name)
		return
	}
	n := l.ns(rq.Namespace)
	n.quotas[rq.Name] = q
	n.view = n.quotaView()
}

// DeleteQuota forgets one ResourceQuota.
func (l *Ledger) DeleteQuota(namespace, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleteQuotaLocked(namespace, name)
}

func (l *Ledger) deleteQuotaLocked(namespace, name string) {
	if n := l.namespaces[namespace]; n != nil {
		delete(n.quotas, name)
		n.view = n.quotaView()
		l.gcNamespaceLocked(namespace)
	}
}

// parseQuota reads the managed keys of a ResourceQuota's spec.hard, per
// family.
func (l *Ledger) parseQuota(rq *corev1.ResourceQuota) *quota {
	q := &quota{name: rq.Name}
	for i := range l.families {
		f := &l.families[i]
		if lim := q.parseFamily(rq, f); lim != (Limits{}) {
			if q.limits == nil {
				q.limits = map[string]Limits{}
			}
			q.limits[f.Name] = lim
		}
		names := f.Names
		for _, res := range []corev1.ResourceName{names.Count, names.Memory, names.MemoryPercentage, names.Cores} {
			key := "requests." + string(res)
			if _, ok := rq.Spec.Hard[corev1.ResourceName(key)]; ok && res != "" {
				q.native = append(q.native, key)
			}
		}
	}
	for _, u := range quotacheck.Ungoverned(rq.Spec.Hard, l.families) {
		q.problems = append(q.problems, Problem{Kind: ProblemUngoverned, Namespace: rq.Namespace, Name: rq.Name, UID: rq.UID,
			Key: u.Key, Value: u.Value, Message: u.Message})
	}
	if len(q.limits) > 0 || len(q.native) > 0 || len(q.problems) > 0 {
		var problems []Problem
		q.scope, problems = parseScope(rq)
		q.problems = append(q.problems, problems...)
	}
	return q
}

// parseFamily reads the limits.<name> keys of one family of a
// ResourceQuota (parseLimits).
func (q *quota) parseFamily(rq *corev1.ResourceQuota, f *effective.Family) Limits {
	lim, problems := parseLimits(limitSource{namespace: rq.Namespace, name: rq.Name, uid: rq.UID, hard: rq.Spec.Hard}, f)
	q.problems = append(q.problems, problems...)
	return lim
}

// limitSource is a list of limits read like a ResourceQuota's spec.hard:
// a ResourceQuota's, or a GPUClusterQuota's spec.hard or spec.perUser
// (problemKey prefixes the keys its problems name; "" for spec.hard).
type limitSource struct {
	namespace, name string
	uid             types.UID
	hard            corev1.ResourceList
	problemKey      string
}

// parseLimits reads the limits.<name> keys of one family
// (quotacheck.Read: a memory limit in bytes, or a value that is not whole,
// is enforced rounded down and reported; an unusable one blocks).
func parseLimits(src limitSource, f *effective.Family) (Limits, []Problem) {
	var lim Limits
	var problems []Problem
	dims := []struct {
		res    corev1.ResourceName
		memory bool
		dst    **Limit
	}{
		{f.Names.Count, false, &lim.GPU},
		{f.Names.Memory, true, &lim.MemMiB},
		{f.Names.Cores, false, &lim.Cores},
	}
	for _, d := range dims {
		if d.res == "" {
			continue
		}
		key := "limits." + string(d.res)
		val, ok := src.hard[corev1.ResourceName(key)]
		if !ok {
			continue
		}
		r := quotacheck.Read(val, d.memory, f.Factor())
		if r.Problem != "" {
			problems = append(problems, Problem{Kind: ProblemQuota, Namespace: src.namespace, Name: src.name, UID: src.uid,
				Key: src.problemKey + key, Value: r.Written, Message: r.Problem})
		}
		*d.dst = &Limit{Value: r.Value, Quota: src.name, Key: key, Invalid: r.Invalid}
	}
	return lim, problems
}

// QuotaValue reads a limit given by hand (top --what-if) as a quota's
// value is read (quotacheck.Read: memory says it is a family's memory
// resource, in units of factor MiB), and refuses one a quota would not
// enforce as written (bytes on a memory resource, not whole, negative):
// typed by hand, it is typed again as meant.
func QuotaValue(s string, memory bool, factor int64) (int64, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("not a quantity: %w", err)
	}
	r := quotacheck.Read(q, memory, factor)
	if r.Problem != "" {
		return 0, errors.New(r.Problem)
	}
	return r.Value, nil
}

// quotaNames are the names of n's quotas, sorted.
func (n *namespace) quotaNames() []string {
	names := make([]string, 0, len(n.quotas))
	for name := range n.quotas {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func tighter(cur, cand *Limit) *Limit {
	switch {
	case cand == nil:
		return cur
	case cur == nil, cand.Value < cur.Value, cand.Value == cur.Value && cand.Invalid && !cur.Invalid:
		return cand
	}
	return cur
}
