package budget

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
)

// UpsertNamespace records a namespace's labels. A GPUClusterBudget that
// stops selecting it keeps counting the burn of its pods up to now (a
// departure, folded by the next checkpoint); one that selects it again
// counts its pods again (from their foldedPods entry: the time out is
// counted).
func (t *Tracker) UpsertNamespace(ns *corev1.Namespace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, known := t.namespaces[ns.Name]
	if known && maps.Equal(old, ns.Labels) {
		return
	}
	lbl := maps.Clone(ns.Labels)
	if lbl == nil {
		lbl = map[string]string{}
	}
	t.namespaces[ns.Name] = lbl
	t.moveLocked(ns.Name, old, known, lbl, true)
}

// DeleteNamespace forgets a namespace's labels (its pods' deletions come
// from the pod watch).
func (t *Tracker) DeleteNamespace(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, known := t.namespaces[name]
	if !known {
		return
	}
	delete(t.namespaces, name)
	t.moveLocked(name, old, true, nil, false)
}

// moveLocked records the departures of the pods of namespace ns from the
// cluster budgets that selected it and do not now, and forgets those of
// the budgets that select it again.
func (t *Tracker) moveLocked(ns string, before map[string]string, knownBefore bool, after map[string]string, knownAfter bool) {
	now := t.clock.Now()
	for _, b := range t.budgets {
		if !b.cluster {
			continue
		}
		was, is := b.selects(ns, before, knownBefore), b.selects(ns, after, knownAfter)
		switch {
		case was && !is:
			for uid, e := range t.byNS[ns] {
				if b.departed == nil {
					b.departed = map[types.UID]time.Time{}
				}
				if _, ok := b.departed[uid]; !ok && !e.deleted() {
					b.departed[uid] = now
				}
			}
		case !was && is:
			for uid := range t.byNS[ns] {
				delete(b.departed, uid)
			}
		}
	}
}
