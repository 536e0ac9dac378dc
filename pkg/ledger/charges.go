package ledger

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Charge is what one object of a namespace is charged now: a recorded GPU
// pod or a recorded ResourceClaim. Memory is MiB.
type Charge struct {
	// Kind is "Pod" or "ResourceClaim".
	Kind string `json:"kind"`
	// Name is the object's.
	Name string `json:"name"`
	// Node is a pod's spec.nodeName ("" before it is bound, and for claims).
	Node string `json:"node,omitempty"`
	// State is a pod's lifecycle state ("" for claims).
	State effective.State `json:"state,omitempty"`
	// Pod is always empty: a template's claim is charged only once the
	// claim exists, decided at its own CREATE (kept for the clients that
	// read it).
	Pod string `json:"pod,omitempty"`
	// Used is what the object is charged, per family.
	Used effective.Usage `json:"used"`
	// User is who the object is charged to (Options.Users; "" when
	// unknown), fixed when it was first recorded.
	User string `json:"user,omitempty"`
}

// Charge kinds.
const (
	ChargePod   = "Pod"
	ChargeClaim = "ResourceClaim"
)

// Charges lists what each object of namespace ns is charged, sorted by
// kind, then name. Invalid pods (charged nothing; see the namespace's
// problems) are not listed; a recorded pod that charges nothing is.
func (l *Ledger) Charges(ns string) []Charge {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []Charge
	for _, r := range l.pods {
		if r.namespace == ns {
			out = append(out, Charge{Kind: ChargePod, Name: r.name, Node: r.bound, State: r.state, Used: r.used.Clone(), User: r.user})
		}
	}
	for _, r := range l.claims {
		if r.namespace == ns {
			out = append(out, Charge{Kind: ChargeClaim, Name: r.name, Used: r.used.Clone(), User: r.user})
		}
	}
	slices.SortFunc(out, func(a, b Charge) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	return out
}

// ClaimCharge is what the recorded ResourceClaim uid is charged now
// (false: none recorded). The budgets burn it over its pods' runs.
func (l *Ledger) ClaimCharge(uid types.UID) (effective.Usage, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r := l.claims[uid]
	if r == nil {
		return nil, false
	}
	return r.used.Clone(), true
}

// NamedClaimCharge is what the recorded ResourceClaim namespace/name is
// charged now (false: none recorded). Admission adds it to the budget
// demand of a pod naming the claim: the claim burns while its pods run.
func (l *Ledger) NamedClaimCharge(namespace, name string) (effective.Usage, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	uid, ok := l.byName[podName{namespace, reservation.ClaimKey(name)}]
	if !ok {
		return nil, false
	}
	r := l.claims[uid]
	if r == nil {
		return nil, false
	}
	return r.used.Clone(), true
}
