package ledger

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// The ledger holds only what the watches delivered. Reservations (pods
// admitted that no watch of this replica has recorded yet) live in the
// namespaces' GPUReservationSets, owned by pkg/admitqueue; whoever asks
// about a namespace hands the ledger the ones it would count, and the
// snapshot counts those the ledger has not recorded (reservation.Counts),
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

// countLocked adds to s the reservations of pending that count.
func (l *Ledger) countLocked(s *NamespaceSnapshot, pending []reservation.Reservation) {
	rec := lockedRecords{l}
	for _, r := range pending {
		if !reservation.Counts(r, s.Namespace, rec) {
			continue
		}
		s.Reserved, _ = s.Reserved.Add(r.Demand)
		s.Reservations++
		if r.Unconfirmed {
			s.Unconfirmed, _ = s.Unconfirmed.Add(r.Demand)
		}
	}
}

// lockedRecords answers reservation.Counts from the ledger's state; its
// caller holds the ledger's lock.
type lockedRecords struct{ l *Ledger }

func (r lockedRecords) Recorded(uid types.UID) bool {
	return r.l.seen[uid] != "" || r.l.claimSeen[uid] != ""
}

func (r lockedRecords) Gone(uid types.UID) bool {
	_, ok := r.l.gone[uid]
	return ok
}

func (r lockedRecords) NameHeldByOther(ns, name string, uid types.UID) bool {
	other, ok := r.l.byName[podName{ns, name}]
	return ok && other != uid
}
