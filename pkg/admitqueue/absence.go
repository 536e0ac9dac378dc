package admitqueue

import (
	"cmp"
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// A reservation nobody recorded is checked confirmAfter after this replica
// first saw it (window.go), by reading its pod; while the pod exists
// unseen, or the read fails, it is read again later, backing off to
// RecheckMax. The schedules use this replica's own clock only.

// absence is this replica's schedule of absence checks and the pods a read
// found absent (tidy removes their reservations).
type absence struct {
	mu     sync.Mutex
	checks map[types.UID]*check
	absent map[types.UID]bool
	// slowest is the longest time, among the last reservations recorded,
	// from this replica first seeing one to its ledger recording the pod;
	// it decays by a quarter each time a faster one is recorded.
	slowest time.Duration
}

type check struct {
	// seen is when this replica first saw the reservation; at is when its
	// pod is next read (zero: seen + confirmAfter, which may grow).
	seen, at time.Time
	checks   int
}

// recorded notes that uid's pod was recorded at now, and how long after
// the reservation was first seen. A reservation seen before this replica
// was last paused or cut off (suspect) teaches nothing: the outage, not
// the API server storing creates, made it slow (learning from it would
// keep ghost reservations for a minute after every outage).
func (a *absence) recorded(uid types.UID, now, suspect time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.checks[uid]
	if c == nil || c.seen.IsZero() || (!suspect.IsZero() && !suspect.Before(c.seen)) {
		return
	}
	if took := now.Sub(c.seen); took > a.slowest {
		a.slowest = took
	} else {
		a.slowest -= (a.slowest - took) / 4
	}
}

func (a *absence) init() {
	a.checks = map[types.UID]*check{}
	a.absent = map[types.UID]bool{}
}

func (a *absence) isAbsent(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.absent[uid]
}

func (a *absence) markAbsent(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.absent[uid] = true
}

// forget drops the schedules of reservations no longer present.
func (a *absence) forget(present map[types.UID]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid := range a.checks {
		if !present[uid] {
			delete(a.checks, uid)
		}
	}
	for uid := range a.absent {
		if !present[uid] {
			delete(a.absent, uid)
		}
	}
}

// dueAt is when the absence of uid's pod is to be checked next:
// confirmAfter after this replica first saw the reservation, then backing
// off to RecheckMax while the pod exists unseen.
func (s *Store) dueAt(uid types.UID) time.Time {
	now := s.opts.Clock.Now()
	s.absence.mu.Lock()
	defer s.absence.mu.Unlock()
	c := s.absence.checks[uid]
	if c == nil {
		c = &check{seen: now}
		s.absence.checks[uid] = c
	}
	if c.at.IsZero() {
		return c.seen.Add(s.confirmAfterLocked())
	}
	return c.at
}

// checked schedules the next check of uid after one was made now.
func (s *Store) checked(uid types.UID) {
	now := s.opts.Clock.Now()
	s.absence.mu.Lock()
	defer s.absence.mu.Unlock()
	c := s.absence.checks[uid]
	if c == nil {
		c = &check{}
		s.absence.checks[uid] = c
	}
	c.checks++
	c.at = now.Add(min(s.confirmAfterLocked()<<min(c.checks, 5), s.opts.RecheckMax))
}

// confirmDue confirms the absence of u's due reservations nobody recorded,
// with at most budget reads, and returns how many it made.
func (s *Store) confirmDue(ctx context.Context, u *gpuadmitv1.GPUReservationSet, budget int) int {
	now := s.opts.Clock.Now()
	var due []gpuadmitv1.Reservation
	for _, r := range u.Status.Reservations {
		unrecorded := r.RecordedResourceVersion == "" || r.ClaimName != "" // a claim's ends only when it is gone
		if unrecorded && s.ledger.Seen(r.PodUID) == "" && !s.dueAt(r.PodUID).After(now) {
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
		pods, claims := byKind(rs)
		s.confirmAbsentByList(ctx, ns, pods, false)
		s.confirmAbsentByList(ctx, ns, claims, true)
		return 2
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var gone []string
	for _, r := range rs {
		wg.Go(func() {
			if !s.podAbsent(ctx, ns, r) {
				return
			}
			s.absence.markAbsent(r.PodUID)
			mu.Lock()
			gone = append(gone, cmp.Or(r.PodName, reservation.ClaimKey(r.ClaimName)))
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(gone) > 0 {
		s.opts.Log.Info("reservations end: their pods do not exist (creates that failed after admission, or reviews not sent by the API server)",
			"namespace", ns, "pods", gone)
	}
	return len(rs)
}

// podAbsent reads r's pod: absent when not found, or when its name holds a
// pod of another UID.
func (s *Store) podAbsent(ctx context.Context, ns string, r gpuadmitv1.Reservation) bool {
	var obj client.Object = &corev1.Pod{}
	name := r.PodName
	if r.ClaimName != "" {
		obj, name = &resourcev1.ResourceClaim{}, r.ClaimName
	}
	if name == "" { // a review without a name (never from an API server): nothing to read
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := s.api.Get(rctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	return apierrors.IsNotFound(err) || (err == nil && obj.GetUID() != r.PodUID)
}

// byKind splits reservations into pods' and claims'.
func byKind(rs []gpuadmitv1.Reservation) (pods, claims []gpuadmitv1.Reservation) {
	for _, r := range rs {
		if r.ClaimName != "" {
			claims = append(claims, r)
		} else {
			pods = append(pods, r)
		}
	}
	return pods, claims
}

// confirmAbsentByList lists the namespace's pods (metadata only, from the
// API server) and notes the reservations of rs whose pod is not among them.
func (s *Store) confirmAbsentByList(ctx context.Context, ns string, rs []gpuadmitv1.Reservation, claims bool) {
	if len(rs) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if claims {
		pods.SetGroupVersionKind(resourcev1.SchemeGroupVersion.WithKind("ResourceClaimList"))
	}
	if err := s.api.List(lctx, pods, client.InNamespace(ns)); err != nil {
		s.opts.Log.Error(err, "listing pods or claims to confirm reservations absent", "namespace", ns, "claims", claims)
		return
	}
	exists := make(map[types.UID]bool, len(pods.Items))
	for _, p := range pods.Items {
		exists[p.UID] = true
	}
	gone := 0
	for _, r := range rs {
		if !exists[r.PodUID] {
			s.absence.markAbsent(r.PodUID)
			gone++
		}
	}
	if gone > 0 {
		s.opts.Log.Info("reservations end: their pods do not exist (creates that failed after admission, or reviews not sent by the API server)",
			"namespace", ns, "reservations", gone)
	}
}
