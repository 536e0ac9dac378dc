package admitqueue

import (
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// Who moves a namespace into or out of a team is whoever may write its
// labels (or the GPUClusterQuota). Leaving must not free what its pods use:
// a team's object lists its members (the namespaces it counted at its last
// write); a member no longer selected that is still charged (a GPU pod or
// claim recorded, or a reservation in the team's object) is a departure,
// written into the object by the next write. A departed namespace still
// counts for the team, and its new pods are still decided against the
// team, until
//
//	selected again ─────────────────────────────▶ a member again
//	no GPU pod, claim or team reservation left ─▶ ENDED
//	teams.leaveGrace since this replica first ──▶ ENDED (each replica by its
//	saw the departure                             own clock, never another's
//	                                              timestamp; the first to see
//	                                              the end writes it)

// departClock is when this replica first saw each departure, by team
// quota and namespace, on its own clock.
type departClock struct {
	mu    sync.Mutex
	first map[departKey]time.Time
}

type departKey struct{ quota, ns string }

func (d *departClock) init() { d.first = map[departKey]time.Time{} }

// since returns when this replica first saw the departure (now, the first
// time it is asked).
func (d *departClock) since(k departKey, now time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.first[k]
	if !ok {
		d.first[k] = now
		return now
	}
	return at
}

func (d *departClock) forget(k departKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.first, k)
}

// departures brings team quota name's members and departures in st up to
// date (see above) and reports whether they changed. A departure's first
// sight is forgotten only when its namespace is selected again (a later
// departure gets a grace of its own): a write of its end that conflicts
// reads it again, and ends it again.
func (s *Store) departures(name string, st *gpuadmitv1.GPUReservationSetStatus) bool {
	now := s.opts.Clock.Now()
	members := map[string]bool{}
	for _, ns := range s.teams.Selected(name) {
		members[ns] = true
		s.departs.forget(departKey{name, ns})
	}
	ended := map[string]bool{}
	var out []gpuadmitv1.Departure
	for _, d := range st.Departures {
		if members[d.Namespace] || ended[d.Namespace] {
			continue
		}
		if !s.charged(d.Namespace, st) || now.Sub(s.departs.since(departKey{name, d.Namespace}, now)) >= s.opts.LeaveGrace {
			ended[d.Namespace] = true
			continue
		}
		out = append(out, d)
		members[d.Namespace] = true
	}
	for _, ns := range st.Members {
		if members[ns] || ended[ns] || !s.charged(ns, st) {
			continue
		}
		s.departs.since(departKey{name, ns}, now)
		out = append(out, gpuadmitv1.Departure{Namespace: ns, NoticedBy: s.opts.Replica, NoticedAt: metav1.NewTime(now)})
		members[ns] = true
		s.opts.Log.Info("namespace left a team quota's selection while charged to it: still counted for the team until its GPU pods end or teams.leaveGrace passes",
			"quota", name, "namespace", ns, "leaveGrace", s.opts.LeaveGrace)
	}
	sorted := slices.Sorted(maps.Keys(members))
	changed := !slices.Equal(sorted, st.Members) || !slices.EqualFunc(out, st.Departures, func(a, b gpuadmitv1.Departure) bool { return a.Namespace == b.Namespace })
	st.Members, st.Departures = sorted, out
	return changed
}

// charged reports whether namespace ns has a GPU pod or claim recorded
// that is charged something, or a reservation in the team's status st.
func (s *Store) charged(ns string, st *gpuadmitv1.GPUReservationSetStatus) bool {
	if slices.ContainsFunc(st.Reservations, func(r gpuadmitv1.Reservation) bool { return r.Namespace == ns }) {
		return true
	}
	return slices.ContainsFunc(s.teams.Charges(ns), func(c ledger.Charge) bool { return !c.Used.IsZero() })
}
