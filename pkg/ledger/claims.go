package ledger

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// ResourceClaims of governed DeviceClasses (pkg/dra) are charged to their
// namespace from the moment the watch delivers them until they are
// deleted: a claim holds its devices for the life of the pods that use it,
// so nothing about a pod's lifecycle lowers it, and a claim shared by
// several pods is one object, charged once. A claim is keyed by its UID
// like a pod, and by reservation.ClaimKey(name) in the names reservations are matched
// by, which no pod name can be (a pod name has no "/"). Every claim,
// generated from a pod's template or not, was decided and reserved at its
// own CREATE (pkg/decision): the ledger charges nothing that was not
// decided.
//
// A claim keeps a floor, like a pod: what it was first charged stays
// charged until it is deleted, with one exception, the allocation.
//
//	claim added ───────────────────────────▶ charged (its demand against the published devices);
//	                                          re-evaluated when the ResourceSlices change until
//	                                          settled, never lower than before
//	allocated, every allocated device sized ▶ charged what its allocated devices hold, once
//	  (Charger.Sized: published with a memory capacity)
//	allocated, a device unknown ───────────▶ never lower than before; re-evaluated when the
//	                                          ResourceSlices change (the same rules)
//	updated otherwise ─────────────────────▶ never lower than before
//	claim deleted ─────────────────────────▶ uncharged
//
// The demand (CEL selectors over the inventory) is computed outside the
// ledger's lock, against the inventory of that moment (immutable), and
// applied under it only while the ResourceSlices are unchanged since
// (sliceGen); a re-evaluation is applied only while the claim's record
// still stands for the same resourceVersion.

// claimRecord is what a recorded claim charges.
type claimRecord struct {
	uid             types.UID
	namespace, name string
	rv              string
	used            effective.Usage
	problem         *Problem
	// settled: an allocation whose every device was sized set the charge
	// (it may not lower it again).
	settled bool
	// recheck is the claim, kept while its charge may still change with
	// the ResourceSlices: every claim not settled (pending, or allocated to
	// a device not sized; the floor keeps the maximum, so a re-evaluation
	// only raises it), one with a problem, or one computed against slices
	// that changed since.
	recheck *resourcev1.ResourceClaim
	// user is who the claim is charged to (Options.Users), as first
	// recorded.
	user string
}

// claimCharge is a claim's demand computed outside the lock.
type claimCharge struct {
	used    effective.Usage
	problem *Problem
	sized   bool
	user    string
}

// applyTries bounds how often UpsertClaim computes a claim's demand again
// when the ResourceSlices changed while it computed.
const applyTries = 4

// UpsertClaim records a claim's charge (an add, an update or a relist).
func (l *Ledger) UpsertClaim(c *resourcev1.ResourceClaim) {
	if l.charger == nil {
		return
	}
	if !l.charger.Governs(&c.Spec) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.claims[c.UID] != nil {
			l.removeClaimLocked(c.UID)
		}
		return
	}
	for try := 1; ; try++ {
		inv, opts, gen := l.claimInputs()
		ch := l.computeClaim(c, inv, opts)
		if l.claimComputed != nil {
			l.claimComputed()
		}
		l.mu.Lock()
		if stale := l.sliceGen != gen; !stale || try == applyTries {
			l.applyClaimLocked(c, ch, stale)
			l.mu.Unlock()
			if stale {
				// The slices' own rechecks may have run before this
				// record stood: evaluate it again now.
				l.recheckClaim(c)
			}
			return
		}
		l.mu.Unlock()
	}
}

// claimInputs snapshots what a claim's demand is computed against.
func (l *Ledger) claimInputs() (*dra.Inventory, map[string]effective.Options, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inventoryLocked(), l.claimOptionsLocked(), l.sliceGen
}

// computeClaim computes c's charge against inv and opts; no lock is held.
func (l *Ledger) computeClaim(c *resourcev1.ResourceClaim, inv *dra.Inventory, opts map[string]effective.Options) claimCharge {
	var ch claimCharge
	if l.users != nil {
		ch.user = l.users.ClaimUserOf(c)
	}
	ds, err := l.charger.Demands(context.Background(), c.Name, &c.Spec, c.Status.Allocation, inv, opts)
	if err != nil {
		ch.problem = &Problem{Kind: ProblemClaim, Namespace: c.Namespace, Name: c.Name, Message: err.Error()}
		return ch
	}
	ch.used = ds.Effective()
	if un := ds.Unresolved(); len(un) > 0 {
		ch.problem = &Problem{Kind: ProblemClaim, Namespace: c.Namespace, Name: c.Name,
			Message: fmt.Sprintf("the memory of %v is a share of a device of unknown size: not charged", un)}
	}
	ch.sized = ch.problem == nil && l.charger.Sized(&c.Spec, c.Status.Allocation, inv)
	return ch
}

// applyClaimLocked charges c what ch says, within the floor: only the first
// allocation whose devices are all sized lowers a charge. stale: ch was
// computed against ResourceSlices that changed since (kept for a recheck).
func (l *Ledger) applyClaimLocked(c *resourcev1.ResourceClaim, ch claimCharge, stale bool) {
	old := l.claims[c.UID]
	rec := &claimRecord{uid: c.UID, namespace: c.Namespace, name: c.Name, rv: c.ResourceVersion, used: ch.used, problem: ch.problem, user: ch.user}
	if old != nil {
		rec.user = old.user // the first record's user
	}
	lowers := ch.sized && (old == nil || !old.settled)
	rec.settled = ch.sized || (old != nil && old.settled)
	if old != nil && !lowers {
		rec.used = rec.used.Max(old.used) // the floor
	}
	if stale || rec.problem != nil || !rec.settled {
		rec.recheck = c
	}
	if old != nil {
		l.unchargeClaimLocked(old)
	}
	l.chargeClaimLocked(rec)
	l.claimSeen[c.UID] = c.ResourceVersion
	if l.claimSeen[c.UID] == "" {
		l.claimSeen[c.UID] = "0"
	}
	l.byName[podName{c.Namespace, reservation.ClaimKey(c.Name)}] = c.UID
}

// recheckClaims evaluates again, after the ResourceSlices changed, the
// claims whose charge may change with them; each result is applied only
// while the claim's record and the slices are still those it was computed
// for.
func (l *Ledger) recheckClaims() {
	l.mu.Lock()
	var todo []*resourcev1.ResourceClaim
	for _, r := range l.claims {
		if r.recheck != nil {
			todo = append(todo, r.recheck)
		}
	}
	l.mu.Unlock()
	for _, c := range todo {
		l.recheckClaim(c)
	}
}

// recheckClaim evaluates c again (no lock held while it does) and applies
// the result only while c's record still stands for c and the slices are
// those it was computed against: a slice that changed meanwhile runs its
// own recheck, which sees the record.
func (l *Ledger) recheckClaim(c *resourcev1.ResourceClaim) {
	inv, opts, gen := l.claimInputs()
	ch := l.computeClaim(c, inv, opts)
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.claims[c.UID]; r != nil && r.recheck == c && l.sliceGen == gen {
		l.applyClaimLocked(c, ch, false)
	}
}

// DeleteClaim uncharges a claim.
func (l *Ledger) DeleteClaim(namespace, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid, ok := l.byName[podName{namespace, reservation.ClaimKey(name)}]; ok {
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
	l.forgetNameLocked(podName{r.namespace, reservation.ClaimKey(r.name)}, uid)
}

func (l *Ledger) chargeClaimLocked(r *claimRecord) {
	n := l.ns(r.namespace)
	used, ok := n.used.Add(r.used)
	if !ok {
		r.problem = &Problem{Kind: ProblemClaim, Namespace: r.namespace, Name: r.name, Message: "namespace " + r.namespace + ": " + errOverflow.Error()}
		r.used = nil
	} else {
		n.used = used
		n.chargeUser(r.user, r.used)
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
	l.unchargeUserLocked(n, r.user, r.used, r.namespace)
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

// UpsertSlice records the devices a ResourceSlice publishes, and
// evaluates again the claims whose charge may change with them.
func (l *Ledger) UpsertSlice(s *resourcev1.ResourceSlice) {
	l.mu.Lock()
	l.slices[s.Name] = s
	l.inventory = nil
	l.sliceGen++
	l.mu.Unlock()
	l.recheckClaims()
}

// DeleteSlice forgets a ResourceSlice (no charge falls with it: see
// UpsertClaim's floor).
func (l *Ledger) DeleteSlice(name string) {
	l.mu.Lock()
	delete(l.slices, name)
	l.inventory = nil
	l.sliceGen++
	l.mu.Unlock()
	l.recheckClaims()
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
