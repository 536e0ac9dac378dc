package gpuusage

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// Start runs the cleaner and the progress Lease until ctx ends (a
// controller-runtime Runnable).
func (s *Store) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.progress.Start(ctx) })
	defer wg.Wait()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	s.refreshWindow(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.refreshWindow(ctx)
			s.Clean(ctx)
		}
	}
}

// Progress is the replica's progress Lease.
func (s *Store) Progress() *Progress { return s.progress }

// Clean does one round over every GPUUsage object with reservations that
// this replica owns (Owner: all of them when replicas do not forward), and
// every deleted one whose reservations this replica keeps: it confirms,
// by reading the pod, the absence of reservations nobody recorded that are
// due, then has the namespace's worker tidy the object (see tidy) in the
// same order as the admissions. It returns how many reservations it
// removed.
func (s *Store) Clean(ctx context.Context) int {
	var list gpuadmitv1.GPUUsageList
	if err := s.client.List(ctx, &list); err != nil {
		s.opts.Log.Error(err, "listing GPUUsage objects")
		return 0
	}
	budget := s.opts.ReadsPerSecond
	present := map[types.UID]bool{}
	var nss []string
	for i := range list.Items {
		u := s.newest(&list.Items[i])
		if len(u.Status.Reservations) == 0 {
			continue
		}
		if err := validate(u); err != nil {
			s.opts.Log.Error(err, "not cleaning a malformed GPUUsage")
			continue
		}
		for _, r := range u.Status.Reservations {
			present[r.PodUID] = true // its schedule is kept (a review here may wait for it)
		}
		if _, self := s.progress.Owner(u.Namespace); !self {
			continue // its owner tidies it, without conflicting with its own admissions
		}
		nss = append(nss, u.Namespace)
		budget -= s.confirmDue(ctx, u, budget)
	}
	s.mu.Lock()
	for ns := range s.lost {
		nss = append(nss, ns)
	}
	s.mu.Unlock()
	removed := 0
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(nss))) {
		jctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		a := &admission{ctx: jctx, done: make(chan error, 1)}
		err := s.enqueue(ns, a)
		cancel()
		if err != nil {
			if !apierrors.IsConflict(err) {
				s.opts.Log.Error(err, "cleaning GPUUsage", "namespace", ns)
			}
			continue // again next round
		}
		removed += a.removed
	}
	s.forget(present)
	return removed
}

// tidy applies to st what this replica knows: it marks the reservations
// whose pod its ledger recorded with the pod's resourceVersion, removes
// those every live replica's watch passed (advancing
// removedResourceVersion), and removes those whose pod a read confirmed
// absent. It returns the reasons of the reservations removed (counted once
// the write succeeded).
func (s *Store) tidy(st *gpuadmitv1.GPUUsageStatus) (removed []string) {
	least, live := s.progress.MinLive()
	kept := st.Reservations[:0:0]
	for _, r := range st.Reservations {
		if rv, ok := parseRV(r.RecordedResourceVersion); ok {
			if live && least >= rv {
				removed = append(removed, EndRecorded)
				if cur, _ := parseRV(st.RemovedResourceVersion); rv > cur {
					st.RemovedResourceVersion = r.RecordedResourceVersion
				}
				continue
			}
		} else if seen := s.ledger.Seen(r.PodUID); seen != "" {
			r.RecordedResourceVersion = s.recordedAt(seen)
			removed = append(removed, "") // changed, nothing ended
		} else if s.isAbsent(r.PodUID) {
			removed = append(removed, EndAbsent)
			continue
		}
		kept = append(kept, r)
	}
	st.Reservations = kept
	return removed
}

// recordedAt is the resourceVersion to publish for a pod this ledger
// recorded: the pod's own, or (for an object without one) how far the pod
// watch got.
func (s *Store) recordedAt(seen string) string {
	if _, ok := parseRV(seen); ok && seen != "0" {
		return seen
	}
	return s.watch.PodsResourceVersion()
}

func (s *Store) ended(reason string) {
	if s.opts.OnEnd != nil {
		s.opts.OnEnd(reason)
	}
}

// dueAt is when the absence of uid's pod is to be checked next:
// confirmAfter after this replica first saw the reservation, then backing
// off to RecheckMax while the pod exists unseen.
func (s *Store) dueAt(uid types.UID) time.Time {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checks[uid]
	if c == nil {
		c = &check{at: now.Add(s.confirmAfter())}
		s.checks[uid] = c
	}
	return c.at
}

// checked schedules the next check of uid after one was made now.
func (s *Store) checked(uid types.UID) {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checks[uid]
	if c == nil {
		c = &check{}
		s.checks[uid] = c
	}
	c.checks++
	c.at = now.Add(min(s.confirmAfter()<<min(c.checks, 5), s.opts.RecheckMax))
}

func (s *Store) forget(present map[types.UID]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid := range s.checks {
		if !present[uid] {
			delete(s.checks, uid)
		}
	}
	for uid := range s.absent {
		if !present[uid] {
			delete(s.absent, uid)
		}
	}
}

// confirmDue confirms the absence of u's due reservations nobody recorded,
// with at most budget reads, and returns how many it made.
func (s *Store) confirmDue(ctx context.Context, u *gpuadmitv1.GPUUsage, budget int) int {
	now := s.opts.Clock.Now()
	var due []gpuadmitv1.Reservation
	for _, r := range u.Status.Reservations {
		if r.RecordedResourceVersion == "" && s.ledger.Seen(r.PodUID) == "" && !s.dueAt(r.PodUID).After(now) {
			due = append(due, r)
		}
	}
	if len(due) > listAbove && budget > 0 {
		budget = len(due) // one list reads them all
	}
	due = due[:min(len(due), budget)]
	for _, r := range due {
		s.checked(r.PodUID)
	}
	return s.confirmAbsent(ctx, u.Namespace, due)
}

// listAbove: more due reservations than this in one namespace are
// confirmed with one list of the namespace's pods (metadata only) instead
// of a read each (a flood of forged reviews leaves hundreds).
const listAbove = 4

// confirmAbsent reads the pods of rs (by name, in parallel; or, for more
// than listAbove, with one list), notes those that do not exist (not
// found, or the name holds a pod of another UID) for tidy to remove, and
// returns how many reads it made. A pod that exists (no watch recorded it
// yet) or a failed read keeps the reservation.
func (s *Store) confirmAbsent(ctx context.Context, ns string, rs []gpuadmitv1.Reservation) int {
	if len(rs) > listAbove {
		s.confirmAbsentByList(ctx, ns, rs)
		return 1
	}
	var wg sync.WaitGroup
	var gone []string
	for _, r := range rs {
		wg.Go(func() {
			absent := r.PodName == "" // a review without a name (never from an API server): nothing to read
			if !absent {
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				p := &corev1.Pod{}
				err := s.api.Get(rctx, client.ObjectKey{Namespace: ns, Name: r.PodName}, p)
				absent = apierrors.IsNotFound(err) || (err == nil && p.UID != r.PodUID)
			}
			if absent {
				s.mu.Lock()
				s.absent[r.PodUID] = true
				gone = append(gone, r.PodName)
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(gone) > 0 {
		s.opts.Log.Info("reservations end: their pods do not exist (creates that failed after admission, or reviews not sent by the API server)",
			"namespace", ns, "pods", gone)
	}
	return len(rs)
}

// confirmAbsentByList lists the namespace's pods (metadata only, from the
// API server) and notes the reservations of rs whose pod is not among them.
func (s *Store) confirmAbsentByList(ctx context.Context, ns string, rs []gpuadmitv1.Reservation) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := s.api.List(lctx, pods, client.InNamespace(ns)); err != nil {
		s.opts.Log.Error(err, "listing pods to confirm reservations absent", "namespace", ns)
		return
	}
	exists := make(map[types.UID]bool, len(pods.Items))
	for _, p := range pods.Items {
		exists[p.UID] = true
	}
	gone := 0
	s.mu.Lock()
	for _, r := range rs {
		if !exists[r.PodUID] {
			s.absent[r.PodUID] = true
			gone++
		}
	}
	s.mu.Unlock()
	if gone > 0 {
		s.opts.Log.Info("reservations end: their pods do not exist (creates that failed after admission, or reviews not sent by the API server)",
			"namespace", ns, "reservations", gone)
	}
}

func (s *Store) isAbsent(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.absent[uid]
}
