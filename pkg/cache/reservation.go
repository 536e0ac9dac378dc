package cache

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Reservations close the gap between an admission decision and the watch:
// two pods admitted in the same second must not both fit into the last free
// GiB, and a pod the watch has not delivered yet (a lagging or stalled
// watch) must still count. A reservation never lapses because time passed:
// it ends when the watch records its pod, or when the API server confirms
// that the pod does not exist (its create failed later in the admission
// chain: a native quota, another webhook, AlreadyExists).
//
//	              Reserve(uid, ns, name, demand)
//	(nothing) ───────────────────────────────────▶ RESERVED ◀────────────────┐
//	                                                 │   │                    │ the pod exists with this
//	    the watch records a pod with this UID        │   │ ConfirmAfter       │ UID (the watch lags), or
//	    (UpsertPod: the record replaces it,          │   │ passed             │ the read failed: check
//	    reason "recorded"), or deletes it            │   ▼                    │ again, backing off
//	    (DeletePod: reason "deleted")                │  DUE ── read the pod by name (Confirmer) ─┘
//	RECORDED ◀──────────────────────────────────────┘   │
//	   │                                                 │ not found, or the name holds a pod with
//	   │ pod deleted                                     │ another UID: ConfirmAbsent (reason "absent")
//	   ▼                                                 ▼
//	(nothing)                                        (nothing)
//
// A reserved demand counts in NamespaceSnapshot.Reserved until it ends; it
// never counts twice, because the record replaces the reservation under the
// same UID in one critical section. A reservation whose pod name is held by
// a recorded pod of another UID does not count while that record exists:
// such a create fails with AlreadyExists, and if the older pod is in fact
// gone, its record stops counting in the same event that lets the
// reservation count again.
type reservation struct {
	uid             types.UID
	namespace, name string
	demand          effective.Vector
	created         time.Time
	// checkAt is when absence is next confirmed; checks counts the reads.
	checkAt time.Time
	checks  int
}

// Reasons a reservation ended (Options.OnReservationEnd).
const (
	EndRecorded = "recorded" // the watch recorded the pod
	EndDeleted  = "deleted"  // the watch saw the pod deleted
	EndAbsent   = "absent"   // the API server confirmed the pod does not exist
)

// ReservationRef names a reservation whose pod is due for an absence check.
type ReservationRef struct {
	UID       types.UID
	Namespace string
	Name      string
	// Age is how long ago the pod was admitted.
	Age time.Duration
}

// Reserve holds demand for a pod the webhook has just admitted, under the
// pod's UID, until the watch records the pod or the API server confirms it
// does not exist. Reserving again replaces the earlier reservation. A pod
// the ledger already knows is not reserved again (its record counts).
func (l *Ledger) Reserve(uid types.UID, namespace, name string, demand effective.Vector) error {
	switch {
	case uid == "":
		return errors.New("empty pod UID")
	case namespace == "":
		return fmt.Errorf("pod %s: empty namespace", uid)
	case demand.GPU < 0 || demand.MemMiB < 0 || demand.Cores < 0:
		return fmt.Errorf("pod %s: negative demand %s", uid, demand)
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.pods[uid]; ok {
		return nil
	}
	if _, ok := l.invalid[uid]; ok {
		return nil
	}
	l.releaseLocked(uid, "")
	r := &reservation{uid: uid, namespace: namespace, name: name, demand: demand, created: now, checkAt: now.Add(l.confirmAfter)}
	l.reservations[uid] = r
	l.ns(namespace).reservations[uid] = r
	return nil
}

// DueReservations returns up to max reservations whose absence check is
// due, oldest check first, and schedules their next check (with backoff)
// so that a read in flight is not started twice.
func (l *Ledger) DueReservations(max int) []ReservationRef {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ReservationRef
	for _, r := range l.reservations {
		if len(out) == max {
			break
		}
		if now.Before(r.checkAt) {
			continue
		}
		r.checks++
		r.checkAt = now.Add(min(l.confirmAfter<<min(r.checks, 5), l.recheckMax))
		out = append(out, ReservationRef{UID: r.uid, Namespace: r.namespace, Name: r.name, Age: now.Sub(r.created)})
	}
	return out
}

// ConfirmAbsent ends the reservation of uid: the API server confirmed that
// its pod does not exist (the create failed after gpuadmit admitted it).
// It reports whether a reservation ended.
func (l *Ledger) ConfirmAbsent(uid types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.reservations[uid]
	l.releaseLocked(uid, EndAbsent)
	return ok
}

// releaseLocked ends the reservation of uid, if any, for reason ("": it is
// replaced by a new one).
func (l *Ledger) releaseLocked(uid types.UID, reason string) {
	r, ok := l.reservations[uid]
	if !ok {
		return
	}
	delete(l.reservations, uid)
	if n := l.namespaces[r.namespace]; n != nil {
		delete(n.reservations, uid)
		l.gcNamespaceLocked(r.namespace)
	}
	if reason != "" && l.onEnd != nil {
		l.onEnd(reason)
	}
}

// shadowedLocked reports whether r does not count: its pod name is held by a
// recorded (or invalid) pod of another UID.
func (l *Ledger) shadowedLocked(r *reservation) bool {
	other, ok := l.byName[podName{r.namespace, r.name}]
	return ok && other != r.uid
}
