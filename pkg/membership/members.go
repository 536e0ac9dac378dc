package membership

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// Labels and annotations of the progress Leases.
const (
	// ProgressLabel marks the Lease each replica renews.
	ProgressLabel = "gpuadmit.io/replica-progress"
	// PodsResourceVersionAnnotation is how far the replica's pod watch got.
	PodsResourceVersionAnnotation = "gpuadmit.io/pods-resource-version"
	// AddressAnnotation is where the replica takes reviews forwarded by the
	// others (host:port), present while it is ready to decide.
	AddressAnnotation = "gpuadmit.io/address"
)

// leaseDuration: a replica whose Lease this replica has not seen change for
// this long (by its own clock) is not live: it no longer holds back the
// removal of recorded reservations. A restarted replica decides only after
// its watches listed everything anew.
const (
	leaseDuration = 10 * time.Second
	renewEvery    = time.Second
	// progressEvery: while hurried (Hurry), a replica publishes a change
	// of its pod watch's progress within this long; observeEvery: how often
	// it reads the others' Leases (from its informer: no request).
	progressEvery = 100 * time.Millisecond
	observeEvery  = 50 * time.Millisecond
	// hurryFor is how long one Hurry lasts.
	hurryFor = 2 * time.Second
	// renewTimeout bounds one renewal (and one read of the others'), so
	// that a stalled connection is noticed (Connected) rather than waited on.
	renewTimeout = 2 * time.Second
)

// PodWatch reports how far the replica's pod watch got (*feed.Feed).
type PodWatch interface {
	PodsResourceVersion() string
}

// Options configure Members.
type Options struct {
	// Namespace is the server's namespace, where the Leases live; Replica
	// names this replica (its Lease is gpuadmit-replica-<Replica>).
	Namespace, Replica string
	// Watch is this replica's pod watch, whose progress the Lease publishes.
	Watch PodWatch
	// Clock tells this replica's time (nil: the wall clock).
	Clock clock.PassiveClock
	Log   logr.Logger
}

// Members publishes how far this replica's pod watch got (a Lease in the
// server's namespace, renewed every second, sooner while hurried) and tells how far every live
// replica's did, which replica owns a namespace, and whether this process
// kept running and reaching the API server (liveness.go). Liveness of the
// others is judged by when this replica saw their Lease change, on its own
// clock: no timestamps are compared across replicas, so clock skew does not
// matter.
type Members struct {
	client    client.Client
	namespace string
	replica   string
	clock     clock.PassiveClock
	watch     PodWatch
	log       logr.Logger

	mu        sync.Mutex
	observed  map[string]*observation
	published time.Time // the first successful renewal, by this replica's clock
	// advertised is where this replica takes forwarded reviews ("" none;
	// Advertise).
	advertised string
	// lastRenew is when this replica last tried to renew, and
	// publishedProgress what its last successful renewal published;
	// hurriedUntil ends the last Hurry (this replica's clock).
	lastRenew, hurriedUntil time.Time
	publishedProgress       string

	// alive tells whether this process kept running and reaching the API
	// server (liveness.go).
	alive liveness
}

type observation struct {
	resourceVersion string // of the Lease
	at              time.Time
	progress        string // "" when the Lease publishes none (not synced yet)
	address         string
}

// New returns the membership of one replica; Start runs it.
func New(c client.Client, opts Options) *Members {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	p := &Members{client: c, namespace: opts.Namespace, replica: opts.Replica, clock: opts.Clock, watch: opts.Watch,
		log: opts.Log, observed: map[string]*observation{}}
	p.alive.init()
	return p
}

// NeedLeaderElection is false: every replica runs its membership.
func (p *Members) NeedLeaderElection() bool { return false }

func (p *Members) leaseName(replica string) string { return "gpuadmit-replica-" + replica }

// Start renews this replica's Lease and reads the others' until ctx ends,
// then deletes its Lease so that the others stop waiting for it. It renews
// every renewEvery, and, while hurried, within progressEvery of a change
// of its progress.
func (p *Members) Start(ctx context.Context) error {
	go p.alive.beat(ctx, p.log)
	t := time.NewTicker(observeEvery)
	defer t.Stop()
	for {
		if p.renewDue() {
			p.renewOnce(ctx)
		}
		octx, cancel := context.WithTimeout(ctx, renewTimeout)
		err := p.observe(octx)
		cancel()
		if err != nil && ctx.Err() == nil {
			p.log.Error(err, "reading the other replicas' progress")
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.leaseName(p.replica)}}
			if err := p.client.Delete(dctx, lease); err != nil && !apierrors.IsNotFound(err) {
				p.log.Error(err, "deleting the progress lease")
			}
			return nil
		case <-t.C:
		}
	}
}

// Hurry has this replica publish its pod watch's progress within
// progressEvery of each change, for the next hurryFor, instead of with its
// next renewal (up to renewEvery later): the admission queues (pkg/admitqueue) call it while
// an object holds reservations, whose removal waits for every live
// replica's published progress.
func (p *Members) Hurry() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hurriedUntil = p.clock.Now().Add(hurryFor)
}

// renewDue reports whether this tick renews: renewEvery after the last
// try, or, while hurried, when the progress changed since the last
// renewal.
func (p *Members) renewDue() bool {
	now, progress := p.clock.Now(), p.watch.PodsResourceVersion()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch since := now.Sub(p.lastRenew); {
	case since >= renewEvery:
	case since >= progressEvery && now.Before(p.hurriedUntil) && progress != p.publishedProgress:
	default:
		return false
	}
	p.lastRenew = now
	return true
}

// renewOnce renews this replica's Lease and notes what it published.
func (p *Members) renewOnce(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, renewTimeout)
	defer cancel()
	rv, err := p.renew(rctx)
	switch {
	case err != nil && apierrors.IsConflict(err):
		// the informer has not delivered this replica's last renewal yet: the next tick renews
		p.log.V(1).Info("renewing the progress lease conflicted", "error", err.Error())
	case err != nil && ctx.Err() == nil:
		p.log.Error(err, "renewing the progress lease")
	case err == nil && rv != "":
		p.alive.renewed()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.publishedProgress = rv
		if p.published.IsZero() {
			p.published = p.clock.Now()
		}
	}
}

// renew writes this replica's progress and returns what it wrote ("":
// nothing yet).
func (p *Members) renew(ctx context.Context) (string, error) {
	rv := p.watch.PodsResourceVersion()
	if rv == "" {
		return "", nil // not synced yet: publish nothing (a Lease without progress holds removals back)
	}
	now := metav1.NewMicroTime(p.clock.Now())
	dur := int32(leaseDuration / time.Second)
	lease := &coordinationv1.Lease{}
	err := p.client.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.leaseName(p.replica)}, lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.leaseName(p.replica),
			Labels:      map[string]string{ProgressLabel: "true"},
			Annotations: map[string]string{PodsResourceVersionAnnotation: rv, AddressAnnotation: p.address()}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &p.replica, LeaseDurationSeconds: &dur, RenewTime: &now}}
		return rv, p.client.Create(ctx, lease)
	case err != nil:
		return "", err
	}
	lease = lease.DeepCopy()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[PodsResourceVersionAnnotation] = rv
	delete(lease.Annotations, AddressAnnotation)
	if addr := p.address(); addr != "" {
		lease.Annotations[AddressAnnotation] = addr
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &p.replica, &dur, &now
	return rv, p.client.Update(ctx, lease)
}

// observe reads the other replicas' Leases.
func (p *Members) observe(ctx context.Context) error {
	var leases coordinationv1.LeaseList
	if err := p.client.List(ctx, &leases, client.InNamespace(p.namespace), client.MatchingLabels{ProgressLabel: "true"}); err != nil {
		return err
	}
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	present := map[string]bool{}
	for i := range leases.Items {
		l := &leases.Items[i]
		name := l.Name
		present[name] = true
		o := p.observed[name]
		if o != nil && o.resourceVersion == l.ResourceVersion {
			continue
		}
		p.observed[name] = &observation{resourceVersion: l.ResourceVersion, at: now,
			progress: l.Annotations[PodsResourceVersionAnnotation], address: l.Annotations[AddressAnnotation]}
	}
	for name := range p.observed {
		if !present[name] {
			delete(p.observed, name)
		}
	}
	return nil
}

// announceFor is how long a replica's Lease has been published before the
// replica decides: every other replica has read it by then (they read the
// Leases every renewEvery), so none removes a reservation this replica
// still needs.
const announceFor = renewEvery + time.Second

// Announced says why this replica may not decide yet (nil once the others
// know it).
func (p *Members) Announced() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.published.IsZero():
		return fmt.Errorf("this replica's progress Lease is not published yet")
	case p.clock.Now().Sub(p.published) < announceFor:
		return fmt.Errorf("this replica's progress Lease was published %s ago; the other replicas read it within %s",
			p.clock.Now().Sub(p.published).Round(time.Millisecond), announceFor)
	}
	return nil
}

// MinLive returns the least pod-watch progress over the live replicas,
// this one included; ok is false while one of them has not published any.
func (p *Members) MinLive() (string, bool) {
	least := p.watch.PodsResourceVersion()
	if !resourceversion.Valid(least) {
		return "", false
	}
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, o := range p.observed {
		if name == p.leaseName(p.replica) || now.Sub(o.at) >= leaseDuration {
			continue
		}
		if !resourceversion.Valid(o.progress) {
			return "", false
		}
		least = resourceversion.Min(least, o.progress)
	}
	return least, true
}

func (o *observation) String() string { return fmt.Sprintf("%s at %s", o.progress, o.at) }
