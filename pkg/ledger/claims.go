package ledger

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// ResourceClaims of governed DeviceClasses (pkg/dra) are charged to their
// namespace from the moment the watch delivers them until they are
// deleted: a claim holds its devices for the life of the pods that use it,
// so nothing about a pod's lifecycle lowers it, and a claim shared by
// several pods is one object, charged once. A claim is keyed by its UID
// like a pod, and by ClaimKey(name) in the names reservations are matched
// by, which no pod name can be (a pod name has no "/").
//
//	claim added ───────────────▶ charged (its demand against the published devices)
//	claim updated, allocated ──▶ charged what its allocated devices hold (the scheduler's result)
//	claim updated otherwise ───▶ never lower than before
//	claim deleted ─────────────▶ uncharged

// ClaimKey is the name under which a claim's reservation and record are
// matched (reservation.go's shadowing).
func ClaimKey(name string) string { return claimPrefix + name }

const claimPrefix = "resourceclaim/"

// claimRecord is what a recorded claim charges.
type claimRecord struct {
	uid             types.UID
	namespace, name string
	used            effective.Usage
	allocated       bool
	problem         *Problem
	// gen is the pod claim a generated claim stands for (generatedBy).
	gen       podClaim
	generated bool
}

// UpsertClaim records a claim's charge (an add, an update or a relist).
func (l *Ledger) UpsertClaim(c *resourcev1.ResourceClaim) {
	if l.charger == nil {
		return
	}
	uid := c.UID
	governed := l.charger.Governs(&c.Spec)
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.claims[uid]
	if !governed {
		if old != nil {
			l.removeClaimLocked(uid)
		}
		return
	}
	rec := &claimRecord{uid: uid, namespace: c.Namespace, name: c.Name, allocated: c.Status.Allocation != nil}
	rec.gen, rec.generated = generatedBy(c)
	// A watch event has no deadline: the charger's per-claim CEL cost
	// budget bounds the evaluation.
	ds, err := l.charger.Demands(context.Background(), c.Name, &c.Spec, c.Status.Allocation, l.inventoryLocked(), l.claimOptionsLocked())
	if err != nil {
		rec.problem = &Problem{Kind: ProblemClaim, Namespace: c.Namespace, Name: c.Name, Message: err.Error()}
	} else {
		rec.used = ds.Effective()
		if un := ds.Unresolved(); len(un) > 0 {
			rec.problem = &Problem{Kind: ProblemClaim, Namespace: c.Namespace, Name: c.Name,
				Message: fmt.Sprintf("the memory of %v is a share of a device of unknown size: not charged", un)}
		}
	}
	if old != nil && (!rec.allocated || old.allocated) {
		rec.used = rec.used.Max(old.used) // only the allocation lowers a charge
	}
	if old != nil {
		l.unchargeClaimLocked(old)
	}
	l.chargeClaimLocked(rec)
	l.claimRecordedLocked(c)
	l.claimSeen[uid] = c.ResourceVersion
	if l.claimSeen[uid] == "" {
		l.claimSeen[uid] = "0"
	}
	l.byName[podName{c.Namespace, ClaimKey(c.Name)}] = uid
}

// DeleteClaim uncharges a claim.
func (l *Ledger) DeleteClaim(namespace, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid, ok := l.byName[podName{namespace, ClaimKey(name)}]; ok {
		l.removeClaimLocked(uid)
	}
}

func (l *Ledger) removeClaimLocked(uid types.UID) {
	r := l.claims[uid]
	if r == nil {
		return
	}
	l.goneLocked(uid)
	l.unchargeClaimLocked(r)
	delete(l.claims, uid)
	delete(l.claimSeen, uid)
	if r.generated && l.generated[r.gen] == uid {
		delete(l.generated, r.gen)
	}
	l.forgetNameLocked(podName{r.namespace, ClaimKey(r.name)}, uid)
}

func (l *Ledger) chargeClaimLocked(r *claimRecord) {
	n := l.ns(r.namespace)
	used, ok := n.used.Add(r.used)
	if !ok {
		r.problem = &Problem{Kind: ProblemClaim, Namespace: r.namespace, Name: r.name, Message: "namespace " + r.namespace + ": " + errOverflow.Error()}
		r.used = nil
	} else {
		n.used = used
	}
	n.claims++
	if r.problem != nil {
		n.claimProblems[r.uid] = r.problem
	}
	l.claims[r.uid] = r
}

func (l *Ledger) unchargeClaimLocked(r *claimRecord) {
	n := l.namespaces[r.namespace]
	if n == nil {
		return
	}
	n.used = l.nonNegativeUsage(n.used.Sub(r.used), "namespace "+r.namespace)
	n.claims--
	delete(n.claimProblems, r.uid)
	l.gcNamespaceLocked(r.namespace)
}

// goneKept is how many deleted claims the ledger remembers: a reservation
// of one of them does not count (its claim's deletion freed the quota at
// once) and ends (Gone). Older ones end when a read finds them gone.
const goneKept = 4096

func (l *Ledger) goneLocked(uid types.UID) {
	if _, ok := l.gone[uid]; ok {
		return
	}
	if len(l.goneOrder) >= goneKept {
		delete(l.gone, l.goneOrder[0])
		l.goneOrder = l.goneOrder[1:]
	}
	l.gone[uid] = struct{}{}
	l.goneOrder = append(l.goneOrder, uid)
}

// Gone reports whether the watch saw claim uid deleted (among the last
// goneKept deletions).
func (l *Ledger) Gone(uid types.UID) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.gone[uid]
	return ok
}

// claimOptionsLocked are the device sizes a claim's whole devices resolve
// against when no ResourceSlice sizes them: the largest device of each
// family over every node (a claim is not bound to a node at admission).
func (l *Ledger) claimOptionsLocked() map[string]effective.Options {
	return optionsOf(l.capacityLocked().ResolveSizesFor(&corev1.Pod{}, l.families))
}

// UpsertSlice records the devices a ResourceSlice publishes.
func (l *Ledger) UpsertSlice(s *resourcev1.ResourceSlice) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slices[s.Name] = s
	l.inventory = nil
}

// DeleteSlice forgets a ResourceSlice.
func (l *Ledger) DeleteSlice(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.slices, name)
	l.inventory = nil
}

// Inventory is the devices the ResourceSlices publish (immutable).
func (l *Ledger) Inventory() *dra.Inventory {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inventoryLocked()
}

func (l *Ledger) inventoryLocked() *dra.Inventory {
	if l.inventory == nil {
		ss := make([]*resourcev1.ResourceSlice, 0, len(l.slices))
		for _, s := range l.slices {
			ss = append(ss, s)
		}
		l.inventory = l.charger.NewInventory(ss)
	}
	return l.inventory
}

// Charger is the claim charger the ledger reads claims with (nil: no
// DeviceClass is governed).
func (l *Ledger) Charger() *dra.Charger { return l.charger }
