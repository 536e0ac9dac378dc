package ledger

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Reservations close the gap between an admission decision and the watch:
// two pods admitted in the same second must not both fit into the last free
// GiB, and a pod the watch has not delivered yet (a lagging or stalled
// watch, or another replica's admission) must still count. They are kept
// in the API server, in the namespace's GPUUsage object (pkg/gpuusage); the
// ledger mirrors, per namespace, the ones this replica must count, as they
// were when the object was last read:
//
//	GPUUsage object read ──SetReservations(ns, rs)──▶ MIRRORED (counted in Reserved)
//	                                                  │
//	    the watch records a pod with this UID         │ (UpsertPod: the record replaces it
//	    in the same critical section                  │  at once; never counted twice)
//	                                                  ▼
//	                                              RECORDED: the object keeps the
//	                                              reservation until every replica
//	                                              recorded the pod (pkg/gpuusage)
//
// A mirrored reservation whose pod name is held by a recorded pod of
// another UID does not count while that record exists: such a create fails
// with AlreadyExists, and if the older pod is in fact gone, its record stops
// counting in the same event that lets the reservation count again.
type reservation struct {
	uid             types.UID
	namespace, name string
	demand          effective.Vector
	unconfirmed     bool
}

// Reservation is a pod admitted but not yet recorded by this ledger.
type Reservation struct {
	UID  types.UID
	Name string
	// Demand is the pod's effective demand (memory in MiB).
	Demand effective.Vector
	// Unconfirmed: no replica's watch has recorded the pod yet, so it may
	// never exist (its create failed after admission, or the review was
	// not the API server's). The decision says when a pod it denies would
	// fit without the unconfirmed reservations: its review may wait for
	// them to end.
	Unconfirmed bool
}

// SetReservations replaces the mirrored reservations of namespace ns with
// rs, leaving out those whose pod this ledger has already recorded.
func (l *Ledger) SetReservations(ns string, rs []Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.namespaces[ns]; n != nil {
		for uid := range n.reservations {
			delete(l.reservations, uid)
		}
		clear(n.reservations)
	}
	for _, r := range rs {
		if r.UID == "" || l.seen[r.UID] != "" {
			continue
		}
		if old := l.reservations[r.UID]; old != nil && old.namespace != ns { // a UID moved namespaces: keep one
			delete(l.namespaces[old.namespace].reservations, r.UID)
		}
		m := &reservation{uid: r.UID, namespace: ns, name: r.Name, demand: r.Demand, unconfirmed: r.Unconfirmed}
		l.reservations[r.UID] = m
		l.ns(ns).reservations[r.UID] = m
	}
	l.gcNamespaceLocked(ns)
}

// Seen returns the resourceVersion of the last event of pod uid this
// ledger's watch delivered ("" when it has delivered none, or the pod is
// deleted).
func (l *Ledger) Seen(uid types.UID) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.seen[uid]
}

// releaseLocked ends the mirrored reservation of uid, if any.
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

// shadowedLocked reports whether r does not count: its pod name is held by a
// recorded (or invalid) pod of another UID.
func (l *Ledger) shadowedLocked(r *reservation) bool {
	other, ok := l.byName[podName{r.namespace, r.name}]
	return ok && other != r.uid
}
