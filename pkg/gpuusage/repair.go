package gpuusage

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// A GPUUsage object deleted by hand while it held reservations must not
// lose them: the pods they stand for may not be in every replica's ledger
// yet. Each replica keeps the reservations the delete event carried (the
// object as last seen) for the namespace until an object holding them is
// written again: decisions count them meanwhile, and the namespace's next
// write (an admission's, or the cleaner's next round, which does not wait
// for one) writes them back, recreating the object. A reservation kept this way
// that another replica already ended is only counted once more until the
// cleaner ends it again: never too few.

// Deleted is the GPUUsage informer's delete handler.
func (s *Store) Deleted(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*gpuadmitv1.GPUUsage)
	if !ok || len(u.Status.Reservations) == 0 || validate(u) != nil {
		return
	}
	s.opts.Log.Info("GPUUsage deleted while it held reservations: they are kept and the object is recreated",
		"namespace", u.Namespace, "reservations", len(u.Status.Reservations))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[u.Namespace] = merged(s.lost[u.Namespace], u.Status)
}

// merged adds to held the reservations of st it lacks, and keeps the
// larger removedResourceVersion.
func merged(held gpuadmitv1.GPUUsageStatus, st gpuadmitv1.GPUUsageStatus) gpuadmitv1.GPUUsageStatus {
	have := make(map[string]bool, len(held.Reservations))
	out := gpuadmitv1.GPUUsageStatus{RemovedResourceVersion: held.RemovedResourceVersion}
	for _, r := range held.Reservations {
		have[string(r.PodUID)] = true
		out.Reservations = append(out.Reservations, r)
	}
	for _, r := range st.Reservations {
		if !have[string(r.PodUID)] {
			out.Reservations = append(out.Reservations, r)
		}
	}
	a, _ := parseRV(out.RemovedResourceVersion)
	if b, ok := parseRV(st.RemovedResourceVersion); ok && b > a {
		out.RemovedResourceVersion = st.RemovedResourceVersion
	}
	out.ReservationCount = int32(len(out.Reservations))
	return out
}

// withLost returns u (nil: no object) with the kept reservations of ns
// merged in, and whether there were any; u itself is not changed.
func (s *Store) withLost(ns string, u *gpuadmitv1.GPUUsage) (*gpuadmitv1.GPUUsage, bool) {
	s.mu.Lock()
	lost, ok := s.lost[ns]
	s.mu.Unlock()
	if !ok {
		return u, false
	}
	if u == nil {
		return &gpuadmitv1.GPUUsage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gpuadmitv1.ObjectName}, Status: lost}, true
	}
	u = u.DeepCopy()
	u.Status = merged(u.Status, lost)
	return u, true
}

// restored forgets the kept reservations of ns: an object holding them
// was written.
func (s *Store) restored(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lost, ns)
}
