package admitqueue

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// A GPUReservationSet deleted by hand while it held reservations or gang
// holds must not lose them: the pods they stand for may not be in every
// replica's ledger yet, and a hold is the room of a gang's pods still to
// come. Each replica keeps the reservations and holds the delete event
// carried (the object as last seen) for the namespace until an object
// holding them is written again: decisions count them meanwhile, and the
// namespace's next write (an admission's, or the cleaner's next round,
// which does not wait for one) writes them back, recreating the object. A
// reservation kept this way that another replica already ended is only
// counted once more until the cleaner ends it again: never too few. A kept
// hold is merged only where the object read holds none of its gang (by kind
// and name): an object written since the deletion wrote its gang's hold as
// it then was (slots consumed by the pods it reserved, or ended).
//
//	object deleted with reservations or holds ──▶ KEPT (counted, merged into every read)
//	                                        │ a round writes the object with them
//	                                        ▼
//	                                     FORGOTTEN (the object holds them again)

// lost are the kept reservations of deleted objects, by namespace.
type lost struct {
	mu sync.Mutex
	m  map[string]gpuadmitv1.GPUReservationSetStatus
}

func (l *lost) init() { l.m = map[string]gpuadmitv1.GPUReservationSetStatus{} }

// Deleted is the GPUReservationSet informer's delete handler.
func (s *Store) Deleted(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*gpuadmitv1.GPUReservationSet)
	if !ok || reservation.Validate(u) != nil {
		return
	}
	if u.Name != gpuadmitv1.ObjectName { // a team's: its members too (a member that leaves before the object is written again departs)
		if len(u.Status.Reservations) > 0 || len(u.Status.Members) > 0 || len(u.Status.Departures) > 0 {
			s.teamDeleted(u)
		}
		return
	}
	if len(u.Status.Reservations) == 0 && len(u.Status.Gangs) == 0 {
		return
	}
	s.opts.Log.Info("GPUReservationSet deleted while it held reservations or gang holds: they are kept and the object is recreated",
		"namespace", u.Namespace, "reservations", len(u.Status.Reservations), "gangs", len(u.Status.Gangs))
	s.lost.mu.Lock()
	defer s.lost.mu.Unlock()
	s.lost.m[u.Namespace] = merged(u.Status, s.lost.m[u.Namespace]) // the object as last seen first: its holds are the newer
}

// merge returns st with the kept reservations of ns merged in, and whether
// there were any.
func (l *lost) merge(ns string, st gpuadmitv1.GPUReservationSetStatus) (gpuadmitv1.GPUReservationSetStatus, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept, ok := l.m[ns]
	if !ok {
		return st, false
	}
	return merged(st, kept), true
}

// forget drops the kept reservations of ns: an object holding them was
// written.
func (l *lost) forget(ns string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, ns)
}

// namespaces lists the namespaces with kept reservations.
func (l *lost) namespaces() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.m))
	for ns := range l.m {
		out = append(out, ns)
	}
	return out
}

// merged adds to held the reservations of st it lacks, the holds of
// st's gangs it holds none of (by kind and name), and (a team's) the
// members and departures it lacks, and keeps the later
// removedResourceVersion.
func merged(held, st gpuadmitv1.GPUReservationSetStatus) gpuadmitv1.GPUReservationSetStatus {
	have := make(map[types.UID]bool, len(held.Reservations))
	out := *held.DeepCopy()
	for _, r := range held.Reservations {
		have[r.PodUID] = true
	}
	for _, r := range st.Reservations {
		if !have[r.PodUID] {
			out.Reservations = append(out.Reservations, r)
		}
	}
	gangs := make(map[string]bool, len(held.Gangs))
	for _, h := range held.Gangs {
		gangs[h.Kind+"/"+h.Name] = true
	}
	for _, h := range st.Gangs {
		if !gangs[h.Kind+"/"+h.Name] {
			out.Gangs = append(out.Gangs, *h.DeepCopy())
		}
	}
	for _, m := range st.Members {
		if !slices.Contains(out.Members, m) {
			out.Members = append(out.Members, m)
		}
	}
	for _, d := range st.Departures {
		if !slices.ContainsFunc(out.Departures, func(x gpuadmitv1.Departure) bool { return x.Namespace == d.Namespace }) {
			out.Departures = append(out.Departures, d)
		}
	}
	out.RemovedResourceVersion = resourceversion.Max(out.RemovedResourceVersion, st.RemovedResourceVersion)
	out.ReservationCount = int32(len(out.Reservations))
	return out
}
