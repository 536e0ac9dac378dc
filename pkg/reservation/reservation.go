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
	// Namespace is the pod's namespace in a team's reservations (a team's
	// GPUReservationSet holds several namespaces'); "" in a namespace's.
	Namespace string
	// User is who the pod is charged to (per-user limits); "" when unknown.
	User string
	// Demand is the pod's effective demand per family (memory in MiB).
	Demand effective.Usage
	// Unconfirmed: no replica's watch has recorded the pod yet, so it may
	// never exist (its create failed after admission, or the review was
	// not the API server's). The decision says when a pod it denies would
	// fit without the unconfirmed reservations: its review may wait for
	// them to end.
	Unconfirmed bool
	// Hold: this is a gang's hold (Hold), not a pod's or a claim's
	// reservation. A hold is told apart by this flag, never by its UID
	// alone (a forged review may carry any UID).
	Hold bool
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
	// NameHolder reports whether namespace ns's pod (or claim) name is
	// held by a recorded (or invalid) object of another UID than uid, and
	// that object's charge.
	NameHolder(ns, name string, uid types.UID) (effective.Usage, bool)
}

// Tally is what the reservations handed in for one namespace add to it.
type Tally struct {
	// Reserved is what they add to the namespace's usage; Unconfirmed the
	// part of it whose pods no replica has recorded yet.
	Reserved, Unconfirmed effective.Usage
	// Count is the number of reservations (or, for a name held by a
	// recorded object, of names) that add something.
	Count int
}

// Count is the ledger's half of the counting rule: what the reservations
// handed in for namespace ns add to its usage. (The other half, which
// reservations a replica hands in, is Countable.)
//
//	pending (handed in) ──for each reservation:
//	   the watch recorded a pod with its UID ──────▶ not counted (its record is in Used)
//	   the watch saw its claim deleted ────────────▶ not counted
//	   a recorded object of another UID has ───────▶ only what the largest such reservation
//	   its name                                      asks beyond that object's charge, per
//	                                                 family and dimension, once per name
//	   otherwise ──────────────────────────────────▶ counted in Reserved
//	                                                 (and in Unconfirmed when Unconfirmed)
//
// A name is held by one object at a time: while the older one exists the
// re-create fails with AlreadyExists, and once it is gone (deleted after
// the watch last heard of it) the re-create may exist in its place. So
// the namespace holds the older object's charge or the re-create's, never
// both: counting the holder's charge and the excess of the largest
// re-create over it counts the larger of the two, per dimension, without
// charging a retried re-create twice.
func Count(pending []Reservation, ns string, rec Records) Tally {
	var t Tally
	var shadowed map[string]*shadow // rare: made when a name is held
	var names []string
	for _, r := range pending {
		if r.UID == "" || rec.Recorded(r.UID) || rec.Gone(r.UID) {
			continue
		}
		if held, ok := rec.NameHolder(ns, r.Name, r.UID); ok {
			g := shadowed[r.Name]
			if g == nil {
				if shadowed == nil {
					shadowed = map[string]*shadow{}
				}
				g = &shadow{held: held}
				shadowed[r.Name] = g
				names = append(names, r.Name)
			}
			g.add(r)
			continue
		}
		t.Reserved, _ = t.Reserved.Add(r.Demand)
		t.Count++
		if r.Unconfirmed {
			t.Unconfirmed, _ = t.Unconfirmed.Add(r.Demand)
		}
	}
	for _, name := range names {
		g := shadowed[name]
		excess := beyond(g.largest, g.held)
		if excess.IsZero() {
			continue
		}
		t.Reserved, _ = t.Reserved.Add(excess)
		t.Unconfirmed, _ = t.Unconfirmed.Add(beyond(g.unconfirmed, g.held))
		t.Count++
	}
	return t
}

// shadow gathers the reservations under a name a recorded object holds.
type shadow struct {
	held, largest, unconfirmed effective.Usage
}

func (g *shadow) add(r Reservation) {
	g.largest = g.largest.Max(r.Demand)
	if r.Unconfirmed {
		g.unconfirmed = g.unconfirmed.Max(r.Demand)
	}
}

// beyond is what u asks beyond held, per family and dimension (never
// negative).
func beyond(u, held effective.Usage) effective.Usage {
	return u.Max(held).Sub(held)
}

// Reader lists, by namespace, the reservations the namespaces'
// GPUReservationSets hold, as this replica counts them (Countable; the
// kept ones of deleted objects included): *admitqueue.Store. The summaries,
// the OpenReports writer and the metrics read them through it.
type Reader interface {
	Reserved(ctx context.Context) (map[string][]Reservation, error)
}
