package gpuusage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// Reasons a reservation ended (Options.OnEnd).
const (
	EndRecorded = "recorded" // every live replica recorded the pod
	EndAbsent   = "absent"   // a read confirmed the pod does not exist
)

// Reasons a reservation was refused (Options.OnRefused).
const (
	RefusedLimit     = "limit"     // the namespace holds MaxReservations already
	RefusedDuplicate = "duplicate" // the pod's UID is reserved otherwise, or recorded
)

// Options configure a Store.
type Options struct {
	// Replica names this replica: the writer of its reservations and its
	// progress Lease.
	Replica string
	// Namespace is the server's namespace, where the progress Leases live.
	Namespace string
	// ConfirmAfter: a reservation nobody recorded is first checked this long
	// after this replica first saw it (0: the window derived from the
	// cluster's other validating webhooks, window.go); RecheckMax bounds
	// the backoff after.
	ConfirmAfter, RecheckMax time.Duration
	// OwnWebhookConfiguration names gpuadmit's ValidatingWebhookConfiguration,
	// which the derived window leaves out.
	OwnWebhookConfiguration string
	// MaxReservations bounds the reservations of one namespace's object
	// (0: no bound); an admission that would add one more is refused.
	MaxReservations int
	// OnRefused, when set, counts reservations refused (RefusedLimit,
	// RefusedDuplicate).
	OnRefused func(reason string)
	// ReadsPerSecond bounds the reads that confirm absence.
	ReadsPerSecond int
	// WorkerIdle is how long a namespace's worker waits for more reviews
	// before it ends (0: one second; see drain).
	WorkerIdle time.Duration
	// Clock tells this replica's time (nil: the wall clock).
	Clock ledger.Clock
	// Advertise, when set, returns the address where this replica takes
	// reviews forwarded by the others ("" while it cannot decide); it is
	// published in its progress Lease and makes namespaces owned (Owner).
	Advertise func() string
	// OnEnd, when set, is told why each reservation this replica removed ended.
	OnEnd func(reason string)
	// OnConflict, when set, counts writes refused for a stale resourceVersion.
	OnConflict func()
	// OnWrite, when set, is told how long each status write took and how
	// many reviews it carried (0: a tidy-only write).
	OnWrite func(took time.Duration, group int)
	Log     logr.Logger
}

// PodWatch reports how far the replica's pod watch got (*ledger.Feed).
type PodWatch interface {
	PodsResourceVersion() string
}

// Store reads and writes the GPUUsage objects for one replica.
type Store struct {
	client   client.Client // reads GPUUsage and Leases from the informer cache; writes to the API server
	api      client.Reader // reads from the API server
	ledger   *ledger.Ledger
	watch    PodWatch
	progress *Progress
	opts     Options

	mu     sync.Mutex
	checks map[types.UID]*check                 // this replica's schedule of absence checks
	absent map[types.UID]bool                   // reservations whose pod a read found absent, for tidy
	lost   map[string]gpuadmitv1.GPUUsageStatus // reservations of deleted objects, by namespace (repair.go)
	latest map[string]*gpuadmitv1.GPUUsage      // what this replica last wrote, until the informer has it
	proved map[string]int64                     // when each namespace was proved fresh (fresh.go)

	qmu       sync.Mutex
	queues    map[string]*queue // reviews waiting, by namespace (commit.go)
	lastWrite atomic.Int64      // how long the last status write took (ns)
	window    atomic.Int64      // the derived confirmAfter (ns; window.go)
}

type check struct {
	at     time.Time
	checks int
}

// NewStore returns a Store; Start runs its cleaner and its progress Lease.
func NewStore(c client.Client, api client.Reader, l *ledger.Ledger, watch PodWatch, opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.WorkerIdle <= 0 {
		opts.WorkerIdle = time.Second
	}
	s := &Store{client: c, api: api, ledger: l, watch: watch, opts: opts, checks: map[types.UID]*check{}, absent: map[types.UID]bool{},
		lost: map[string]gpuadmitv1.GPUUsageStatus{}, latest: map[string]*gpuadmitv1.GPUUsage{}, queues: map[string]*queue{},
		proved: map[string]int64{}}
	s.progress = newProgress(c, opts.Namespace, opts.Replica, opts.Clock, watch, opts.Advertise, opts.Log.WithName("progress"))
	return s
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// caughtUp waits until this replica's pod watch reached the point up to
// which reservations were removed from u (their pods are in its ledger, or
// were seen go), or ctx ends.
func (s *Store) caughtUp(ctx context.Context, u *gpuadmitv1.GPUUsage) error {
	if u == nil {
		return nil
	}
	need, ok := parseRV(u.Status.RemovedResourceVersion)
	if !ok {
		return nil
	}
	for {
		if got, ok := parseRV(s.watch.PodsResourceVersion()); ok && got >= need {
			return nil
		}
		select {
		case <-ctx.Done():
			got := s.watch.PodsResourceVersion()
			return fmt.Errorf("this replica's pod watch (at resourceVersion %s) is behind the reservations other replicas removed from GPUUsage %s/%s (through %d): %w",
				got, u.Namespace, u.Name, need, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// read returns the namespace's object (nil when there is none) from the
// informer cache. After a conflict (stale names the resourceVersion the
// refused write carried, "0" for a create), it waits up to catchUpWait for
// the cache to hold a newer version, then asks the API server: the winner's
// write usually reaches the informer within milliseconds, and waiting for
// it costs the API server nothing and lets more reviews join the group.
func (s *Store) read(ctx context.Context, ns string, stale string) (*gpuadmitv1.GPUUsage, error) {
	key := client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}
	u := &gpuadmitv1.GPUUsage{}
	err := s.client.Get(ctx, key, u)
	if old, ok := parseRV(stale); ok {
		for deadline := time.Now().Add(catchUpWait); ; {
			if cur, _ := parseRV(u.ResourceVersion); err == nil && cur > old {
				break
			}
			if time.Now().After(deadline) {
				u = &gpuadmitv1.GPUUsage{}
				err = s.api.Get(ctx, key, u)
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("reading GPUUsage %s/%s: %w", ns, gpuadmitv1.ObjectName, ctx.Err())
			case <-time.After(time.Millisecond):
			}
			u = &gpuadmitv1.GPUUsage{}
			err = s.client.Get(ctx, key, u)
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		s.written(ns, nil)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading GPUUsage %s/%s: %w", ns, gpuadmitv1.ObjectName, err)
	}
	u = s.newest(u)
	if err := validate(u); err != nil {
		return nil, fmt.Errorf("%w; the namespace's GPU pods are refused until it is fixed or deleted", err)
	}
	return u, nil
}

// catchUpWait bounds how long a read after a conflict waits for the
// informer before it asks the API server.
const catchUpWait = 50 * time.Millisecond

// mirror sets the ledger's reservations of ns to those of u this replica
// must count.
func (s *Store) mirror(ns string, u *gpuadmitv1.GPUUsage) {
	if u == nil {
		s.ledger.SetReservations(ns, nil)
		return
	}
	podsRV, _ := parseRV(s.watch.PodsResourceVersion())
	s.ledger.SetReservations(ns, countable(u, s.ledger, podsRV))
}

// write sets u's status to st (creating the object when u is nil) with
// u's resourceVersion, and returns the object written.
func (s *Store) write(ctx context.Context, ns string, u *gpuadmitv1.GPUUsage, st gpuadmitv1.GPUUsageStatus) (*gpuadmitv1.GPUUsage, error) {
	if u == nil {
		u = &gpuadmitv1.GPUUsage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gpuadmitv1.ObjectName,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "gpuadmit"}}}
		if err := s.client.Create(ctx, u); err != nil {
			return nil, err
		}
	} else {
		u = u.DeepCopy()
	}
	u.Status = st
	return u, s.update(ctx, u)
}

// update writes u's status with its resourceVersion and remembers the
// object written: the informer delivers it a little later, and a decision
// that read the older copy would only conflict.
func (s *Store) update(ctx context.Context, u *gpuadmitv1.GPUUsage) error {
	u.Status.ReservationCount = int32(len(u.Status.Reservations))
	if err := s.client.Status().Update(ctx, u); err != nil {
		return err
	}
	s.written(u.Namespace, u)
	return nil
}

// written remembers u as the namespace's object this replica wrote last
// (nil: forget it).
func (s *Store) written(ns string, u *gpuadmitv1.GPUUsage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u == nil {
		delete(s.latest, ns)
		return
	}
	s.latest[ns] = u.DeepCopy()
}

// newest returns u, or the copy this replica wrote of the same object when
// that is newer (resourceVersions of one object grow); it forgets the copy
// once u caught up.
func (s *Store) newest(u *gpuadmitv1.GPUUsage) *gpuadmitv1.GPUUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := s.latest[u.Namespace]
	if mine == nil {
		return u
	}
	have, _ := parseRV(u.ResourceVersion)
	if w, ok := parseRV(mine.ResourceVersion); ok && w > have && mine.UID == u.UID {
		return mine.DeepCopy()
	}
	delete(s.latest, u.Namespace)
	return u
}

// mirrorStatus mirrors st as the namespace's object's status.
func (s *Store) mirrorStatus(ns string, st gpuadmitv1.GPUUsageStatus) {
	s.mirror(ns, &gpuadmitv1.GPUUsage{Status: st})
}

func without(rs []gpuadmitv1.Reservation, uid types.UID) []gpuadmitv1.Reservation {
	out := make([]gpuadmitv1.Reservation, 0, len(rs)+1)
	for _, r := range rs {
		if r.PodUID != uid {
			out = append(out, r)
		}
	}
	return out
}
