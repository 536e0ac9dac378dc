package reservation

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Reservation is a pod (or claim) admitted but perhaps not yet recorded by
// a replica's ledger: what the ledger is handed to count.
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

// Records is what a ledger knows of a reservation's object, asked while
// it holds its lock (so that a pod counts once: as a record or as a
// reservation, never both, never neither).
type Records interface {
	// Recorded reports whether the watch recorded the pod or claim uid
	// (and has not seen it deleted).
	Recorded(uid types.UID) bool
	// Gone reports whether the watch saw claim uid deleted.
	Gone(uid types.UID) bool
	// NameHeldByOther reports whether namespace ns's pod name is held by
	// a recorded (or invalid) pod of another UID than uid.
	NameHeldByOther(ns, name string, uid types.UID) bool
}

// Counts is the ledger's half of the counting rule: whether reservation r,
// handed in for namespace ns, counts in its Reserved. (The other half,
// which reservations a replica hands in, is Countable.)
//
//	pending (handed in) ──for each reservation:
//	   the watch recorded a pod with its UID ──────▶ not counted (its record is in Used)
//	   the watch saw its claim deleted ────────────▶ not counted
//	   a recorded pod of another UID has its name ─▶ not counted (that create fails with
//	                                                 AlreadyExists; if the older pod is in
//	                                                 fact gone, its record stops counting in
//	                                                 the same event that lets this count)
//	   otherwise ──────────────────────────────────▶ counted in Reserved
//	                                                 (and in Unconfirmed when Unconfirmed)
func Counts(r Reservation, ns string, rec Records) bool {
	return r.UID != "" && !rec.Recorded(r.UID) && !rec.Gone(r.UID) && !rec.NameHeldByOther(ns, r.Name, r.UID)
}

// Reader lists, by namespace, the reservations the namespaces'
// GPUReservationSets hold, as this replica counts them (Countable; the
// kept ones of deleted objects included): *admitqueue.Store. The summaries,
// the OpenReports writer and the metrics read them through it.
type Reader interface {
	Reserved(ctx context.Context) (map[string][]Reservation, error)
}
