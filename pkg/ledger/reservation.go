package ledger

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// The ledger holds only what the watches delivered. Reservations (pods
// admitted that no watch of this replica has recorded yet) live in the
// namespaces' GPUReservationSets, owned by pkg/admitqueue; whoever asks
// about a namespace hands the ledger the ones it would count, and the
// snapshot counts those the ledger has not recorded (reservation.Count),
// in the same critical section as the usage, so that a pod counts once.

// Seen returns the resourceVersion of the last event of pod uid this
// ledger's watch delivered ("" when it has delivered none, or the pod is
// deleted).
func (l *Ledger) Seen(uid types.UID) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if rv, ok := l.claimSeen[uid]; ok {
		return rv
	}
	return l.seen[uid]
}

// countLocked adds to s what the reservations of pending add
// (reservation.Count).
func (l *Ledger) countLocked(s *NamespaceSnapshot, pending []reservation.Reservation) {
	t := reservation.Count(pending, s.Namespace, lockedRecords{l})
	s.Reserved, _ = s.Reserved.Add(t.Reserved)
	s.Unconfirmed, _ = s.Unconfirmed.Add(t.Unconfirmed)
	s.Reservations += t.Count
}

// lockedRecords answers reservation.Count from the ledger's state; its
// caller holds the ledger's lock.
type lockedRecords struct{ l *Ledger }

func (r lockedRecords) Recorded(uid types.UID) bool {
	return r.l.seen[uid] != "" || r.l.claimSeen[uid] != ""
}

func (r lockedRecords) Gone(uid types.UID) bool {
	_, ok := r.l.gone[uid]
	return ok
}

func (r lockedRecords) NameHolder(ns, name string, uid types.UID) (effective.Usage, bool) {
	other, ok := r.l.byName[podName{ns, name}]
	if !ok || other == uid {
		return nil, false
	}
	if p := r.l.pods[other]; p != nil {
		return p.used, true
	}
	if c := r.l.claims[other]; c != nil {
		return c.used, true
	}
	return nil, true // an invalid object: it charges nothing
}
