package ledger

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// The ledger holds only what the watches delivered. Reservations (pods
// admitted that no watch of this replica has recorded yet) live in the
// namespaces' GPUUsage objects, owned by pkg/gpuusage; whoever asks about a
// namespace hands the ledger the ones it would count, and the snapshot
// counts those the ledger has not recorded, in the same critical section as
// the usage, so that a pod counts once:
//
//	pending (handed in) ──Namespace(ns, pending)──▶ for each reservation:
//	   the watch recorded a pod with its UID ──────▶ not counted (its record is in Used)
//	   a recorded pod of another UID has its name ─▶ not counted (that create fails with
//	                                                 AlreadyExists; if the older pod is in
//	                                                 fact gone, its record stops counting in
//	                                                 the same event that lets this count)
//	   otherwise ──────────────────────────────────▶ counted in Reserved
//	                                                 (and in Unconfirmed when Unconfirmed)

// Reservation is a pod admitted but perhaps not yet recorded by this ledger.
type Reservation struct {
	UID  types.UID
	Name string
	// Demand is the pod's effective demand per family (memory in MiB).
	Demand effective.Usage
	// Unconfirmed: no replica's watch has recorded the pod yet, so it may
	// never exist (its create failed after admission, or the review was
	// not the API server's). The decision says when a pod it denies would
	// fit without the unconfirmed reservations: its review may wait for
	// them to end.
	Unconfirmed bool
}

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
func (l *Ledger) countLocked(s *NamespaceSnapshot, pending []Reservation) {
	for _, r := range pending {
		if r.UID == "" || l.seen[r.UID] != "" || l.claimSeen[r.UID] != "" || l.goneClaimLocked(r.UID) || l.shadowedLocked(s.Namespace, r) {
			continue
		}
		s.Reserved, _ = s.Reserved.Add(r.Demand)
		s.Reservations++
		if r.Unconfirmed {
			s.Unconfirmed, _ = s.Unconfirmed.Add(r.Demand)
		}
	}
}

func (l *Ledger) goneClaimLocked(uid types.UID) bool {
	_, ok := l.gone[uid]
	return ok
}

// shadowedLocked reports whether r does not count: its pod name is held by a
// recorded (or invalid) pod of another UID.
func (l *Ledger) shadowedLocked(ns string, r Reservation) bool {
	other, ok := l.byName[podName{ns, r.Name}]
	return ok && other != r.UID
}
