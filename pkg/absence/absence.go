package absence

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Options configure a Confirmer.
type Options struct {
	// ConfirmAfter: a reservation nobody recorded is first checked this long
	// after this replica first saw it (0: the window derived from the
	// cluster's other validating webhooks, window.go); RecheckMax bounds
	// the backoff after.
	ConfirmAfter, RecheckMax time.Duration
	// OwnWebhookConfiguration names gpuadmit's ValidatingWebhookConfiguration,
	// which the derived window leaves out.
	OwnWebhookConfiguration string
	// Clock tells this replica's time (nil: the wall clock).
	Clock clock.PassiveClock
	Log   logr.Logger
}

// Records is what a Confirmer needs of this replica's pod watch
// (*ledger.Ledger).
type Records interface {
	// Seen is the resourceVersion at which the watch recorded pod uid ("":
	// not recorded).
	Seen(uid types.UID) string
}

// Confirmer is this replica's schedule of absence checks and the pods a
// read found absent (the tidying removes their reservations).
type Confirmer struct {
	api     client.Reader // pods and claims, read from the API server
	configs client.Reader // the validating webhook configurations
	records Records
	opts    Options

	mu     sync.Mutex
	checks map[types.UID]*check
	absent map[types.UID]bool
	// slowest is the longest time, among the last reservations recorded,
	// from this replica first seeing one to its ledger recording the pod;
	// it decays by a quarter each time a faster one is recorded.
	slowest time.Duration

	window atomic.Int64 // the derived confirmAfter (ns; window.go)
}

type check struct {
	// seen is when this replica first saw the reservation; at is when its
	// pod is next read (zero: seen + confirmAfter, which may grow).
	seen, at time.Time
	checks   int
}

// New returns a Confirmer that reads pods and claims through api, the
// webhook configurations through configs, and asks records whether this
// replica's watch recorded a pod.
func New(api, configs client.Reader, records Records, opts Options) *Confirmer {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Confirmer{api: api, configs: configs, records: records, opts: opts,
		checks: map[types.UID]*check{}, absent: map[types.UID]bool{}}
}

// Recorded notes that uid's pod was recorded at now, and how long after
// the reservation was first seen. A reservation seen before this replica
// was last paused or cut off (suspect) teaches nothing: the outage, not
// the API server storing creates, made it slow (learning from it would
// keep ghost reservations for a minute after every outage).
func (a *Confirmer) Recorded(uid types.UID, now, suspect time.Time) {
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

// IsAbsent reports whether a read found uid's pod (or claim) absent.
func (a *Confirmer) IsAbsent(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.absent[uid]
}

func (a *Confirmer) markAbsent(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.absent[uid] = true
}

// Forget drops the schedules of reservations no longer present.
func (a *Confirmer) Forget(present map[types.UID]bool) {
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

// DueAt is when the absence of uid's pod is to be checked next:
// confirmAfter after this replica first saw the reservation (the first
// call), then backing off to RecheckMax while the pod exists unseen.
func (a *Confirmer) DueAt(uid types.UID) time.Time {
	now := a.opts.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.checks[uid]
	if c == nil {
		c = &check{seen: now}
		a.checks[uid] = c
	}
	if c.at.IsZero() {
		return c.seen.Add(a.confirmAfterLocked())
	}
	return c.at
}

// Checked schedules the next check of uid after one was made now.
func (a *Confirmer) Checked(uid types.UID) {
	now := a.opts.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.checks[uid]
	if c == nil {
		c = &check{}
		a.checks[uid] = c
	}
	c.checks++
	c.at = now.Add(min(a.confirmAfterLocked()<<min(c.checks, 5), a.opts.RecheckMax))
}

// ConfirmDue confirms the absence of u's due reservations nobody recorded,
// with at most budget reads, and returns how many it made.
func (a *Confirmer) ConfirmDue(ctx context.Context, u *gpuadmitv1.GPUReservationSet, budget int) int {
	now := a.opts.Clock.Now()
	var due []gpuadmitv1.Reservation
	for _, r := range u.Status.Reservations {
		unrecorded := r.RecordedResourceVersion == "" || r.ClaimName != "" // a claim's ends only when it is gone
		if unrecorded && a.records.Seen(r.PodUID) == "" && !a.DueAt(r.PodUID).After(now) {
			due = append(due, r)
		}
	}
	if len(due) > listAbove && budget > 0 {
		budget = len(due) // one list reads them all
	}
	due = due[:min(len(due), budget)]
	for _, r := range due {
		a.Checked(r.PodUID)
	}
	return a.ConfirmEach(ctx, u.Namespace, due)
}

// ConfirmEach confirms rs as Confirm does, each in its own namespace: a
// team's reservation (gpuadmitv1.TeamObjectName) names its pod's
// namespace; one that names none is of ns. It returns how many reads it
// made.
func (a *Confirmer) ConfirmEach(ctx context.Context, ns string, rs []gpuadmitv1.Reservation) int {
	by := map[string][]gpuadmitv1.Reservation{}
	for _, r := range rs {
		in := cmp.Or(r.Namespace, ns)
		by[in] = append(by[in], r)
	}
	reads := 0
	for _, in := range slices.Sorted(maps.Keys(by)) {
		reads += a.Confirm(ctx, in, by[in])
	}
	return reads
}

// listAbove: more due reservations than this in one namespace are
// confirmed with one list of the namespace's pods (metadata only) instead
// of a read each (a flood of forged reviews leaves hundreds).
const listAbove = 4

// Confirm reads the pods of rs (by name, in parallel; or, for more than
// listAbove, with one list), notes those that do not exist (not found, or
// the name holds a pod of another UID) as absent, and returns how many
// reads it made. A pod that exists (no watch recorded it yet) or a failed
// read keeps the reservation.
func (a *Confirmer) Confirm(ctx context.Context, ns string, rs []gpuadmitv1.Reservation) int {
	if len(rs) > listAbove {
		pods, claims := byKind(rs)
		a.confirmByList(ctx, ns, pods, false)
		a.confirmByList(ctx, ns, claims, true)
		return 2
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var gone []string
	for _, r := range rs {
		wg.Go(func() {
			if !a.podAbsent(ctx, ns, r) {
				return
			}
			a.markAbsent(r.PodUID)
			mu.Lock()
			gone = append(gone, cmp.Or(r.PodName, reservation.ClaimKey(r.ClaimName)))
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(gone) > 0 {
		a.opts.Log.Info("reservations end: their pods do not exist (creates that failed after admission, or reviews not sent by the API server)",
			"namespace", ns, "pods", gone)
	}
	return len(rs)
}

// podAbsent reads r's pod: absent when not found, or when its name holds a
// pod of another UID.
func (a *Confirmer) podAbsent(ctx context.Context, ns string, r gpuadmitv1.Reservation) bool {
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
	err := a.api.Get(rctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
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

// confirmByList lists the namespace's pods (metadata only, from the API
// server) and notes the reservations of rs whose pod is not among them.
func (a *Confirmer) confirmByList(ctx context.Context, ns string, rs []gpuadmitv1.Reservation, claims bool) {
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
	if err := a.api.List(lctx, pods, client.InNamespace(ns)); err != nil {
		a.opts.Log.Error(err, "listing pods or claims to confirm reservations absent", "namespace", ns, "claims", claims)
		return
	}
	exists := make(map[types.UID]bool, len(pods.Items))
	for _, p := range pods.Items {
		exists[p.UID] = true
	}
	gone := 0
	for _, r := range rs {
		if !exists[r.PodUID] {
			a.markAbsent(r.PodUID)
			gone++
		}
	}
	if gone > 0 {
		a.opts.Log.Info("reservations end: their pods do not exist (creates that failed after admission, or reviews not sent by the API server)",
			"namespace", ns, "reservations", gone)
	}
}
