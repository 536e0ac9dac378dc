package cache

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// sweepEvery bounds how often Reserve sweeps expired reservations.
const sweepEvery = time.Second

// Reservations close the gap between an admission decision and the watch:
// two pods admitted in the same second must not both fit into the last free
// GiB. The cycle (assume -> confirm -> expire, as in the scheduler's and
// Kueue's caches):
//
//	              Reserve(uid, ns, demand, ttl)
//	(nothing) ───────────────────────────────────▶ RESERVED ──┐
//	                                                 │  │  ▲  │ Reserve again
//	                                                 │  │  └──┘ (new demand, new deadline)
//	      the watch sees a pod with this UID         │  │
//	      (UpsertPod: the record replaces it)        │  │ TTL passed (the create failed
//	RECORDED ◀───────────────────────────────────────┘  │ later in the admission chain,
//	   │                                                │ or storing the pod failed)
//	   │ pod deleted                                    ▼
//	   ▼                                             EXPIRED: not counted from the
//	(nothing)                                        deadline on; dropped by Sweep
//	                                                 or the next Reserve
//
// A reserved demand counts in NamespaceSnapshot.Reserved until it is
// confirmed or expires; it never counts twice, because the record replaces
// the reservation under the same UID in one critical section.
type reservation struct {
	uid       types.UID
	namespace string
	demand    effective.Vector
	expires   time.Time
}

// Reserve holds demand for a pod the webhook has just admitted, under the
// pod's UID, until the watch sees the pod or ttl passes. Reserving again
// replaces the earlier reservation. A pod the ledger already knows is not
// reserved again (its record counts).
func (l *Ledger) Reserve(uid types.UID, namespace string, demand effective.Vector, ttl time.Duration) error {
	switch {
	case uid == "":
		return errors.New("reserve: empty pod UID")
	case namespace == "":
		return fmt.Errorf("reserve %s: empty namespace", uid)
	case ttl <= 0:
		return fmt.Errorf("reserve %s: TTL must be positive, got %s", uid, ttl)
	case demand.GPU < 0 || demand.MemMiB < 0 || demand.Cores < 0:
		return fmt.Errorf("reserve %s: negative demand %s", uid, demand)
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !now.Before(l.nextSweep) { // amortised: at most one full sweep per sweepEvery
		l.sweepLocked(now)
		l.nextSweep = now.Add(sweepEvery)
	}
	if _, ok := l.pods[uid]; ok {
		return nil
	}
	if _, ok := l.invalid[uid]; ok {
		return nil
	}
	l.releaseLocked(uid)
	r := &reservation{uid: uid, namespace: namespace, demand: demand, expires: now.Add(ttl)}
	l.reservations[uid] = r
	l.ns(namespace).reservations[uid] = r
	return nil
}

// Release drops the reservation of uid, if any (for example when the
// admission is known to have failed).
func (l *Ledger) Release(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(uid)
}

// Sweep drops expired reservations and returns how many it dropped. Expired
// reservations stop counting at their deadline whether or not Sweep runs;
// Sweep only frees their memory.
func (l *Ledger) Sweep() int {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sweepLocked(now)
}

func (l *Ledger) sweepLocked(now time.Time) int {
	n := 0
	for uid, r := range l.reservations {
		if r.expired(now) {
			l.releaseLocked(uid)
			n++
		}
	}
	return n
}

func (l *Ledger) releaseLocked(uid types.UID) {
	r, ok := l.reservations[uid]
	if !ok {
		return
	}
	delete(l.reservations, uid)
	if n := l.namespaces[r.namespace]; n != nil {
		delete(n.reservations, uid)
		l.gcNamespaceLocked(r.namespace)
	}
}

func (r *reservation) expired(now time.Time) bool { return !now.Before(r.expires) }
