package gpuusage

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// copies are the objects this replica wrote last, by namespace, until the
// informer delivers them: a round that read the older copy would only
// conflict. changed wakes the rounds that wait for the informer.
type copies struct {
	mu      sync.Mutex
	latest  map[string]*gpuadmitv1.GPUReservationSet
	changed chan struct{} // closed and replaced when the informer delivers a GPUReservationSet
}

func (c *copies) init() {
	c.latest = map[string]*gpuadmitv1.GPUReservationSet{}
	c.changed = make(chan struct{})
}

// remember keeps u as the namespace's object this replica wrote last (nil:
// forget it).
func (c *copies) remember(ns string, u *gpuadmitv1.GPUReservationSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u == nil {
		delete(c.latest, ns)
		return
	}
	c.latest[ns] = u.DeepCopy()
}

// newest returns u, or the copy this replica wrote of the same object when
// that is newer (resourceVersions of one object grow); it forgets the copy
// once u caught up.
func (c *copies) newest(u *gpuadmitv1.GPUReservationSet) *gpuadmitv1.GPUReservationSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	mine := c.latest[u.Namespace]
	if mine == nil {
		return u
	}
	if mine.UID == u.UID && resourceversion.Newer(mine.ResourceVersion, u.ResourceVersion) {
		return mine.DeepCopy()
	}
	delete(c.latest, u.Namespace)
	return u
}

// next returns a channel closed at the informer's next delivery.
func (c *copies) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Changed is the GPUReservationSet informer's add and update handler: it wakes the
// rounds waiting for the informer to catch up after a conflict, and, while
// the object holds a reservation of a pod this replica's watch recorded,
// hurries this replica's progress Lease (Membership.Hurry): the
// reservation's removal waits for every live replica's progress to pass
// the pod.
func (s *Store) Changed(obj any) {
	if u, ok := obj.(*gpuadmitv1.GPUReservationSet); ok && slices.ContainsFunc(u.Status.Reservations, func(r gpuadmitv1.Reservation) bool {
		return r.ClaimName == "" && s.ledger.Seen(r.PodUID) != ""
	}) {
		s.members.Hurry()
	}
	s.copies.mu.Lock()
	defer s.copies.mu.Unlock()
	close(s.copies.changed)
	s.copies.changed = make(chan struct{})
}

// caughtUp waits until this replica's pod watch reached removed, the point
// up to which reservations were removed from the namespace's object (their
// pods are in its ledger, or were seen go), or ctx ends.
func (s *Store) caughtUp(ctx context.Context, ns, removed string) error {
	if !resourceversion.Valid(removed) {
		return nil
	}
	if err := s.watch.WaitForPods(ctx, removed); err != nil {
		return fmt.Errorf("this replica's pod watch (at resourceVersion %s) is behind the reservations other replicas removed from GPUReservationSet %s/%s (through %s): %w",
			s.watch.PodsResourceVersion(), ns, gpuadmitv1.ObjectName, removed, err)
	}
	return nil
}

// catchUpWait bounds how long a read after a conflict waits for the
// informer before it asks the API server.
const catchUpWait = 50 * time.Millisecond

// read returns the namespace's object (nil when there is none) from the
// informer cache. After a conflict (refused names the resourceVersion the
// refused write carried, "0" for a create), it waits up to catchUpWait for
// the informer to deliver a newer version, then asks the API server: the
// winner's write usually reaches the informer within milliseconds, and
// waiting for it costs the API server nothing and lets more reviews join
// the batch.
func (s *Store) read(ctx context.Context, ns, refused string) (*gpuadmitv1.GPUReservationSet, error) {
	u, err := s.get(ctx, s.client, ns)
	if refused != "" {
		u, err = s.newerThan(ctx, ns, refused, u, err)
	}
	switch {
	case apierrors.IsNotFound(err):
		s.copies.remember(ns, nil)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading GPUReservationSet %s/%s: %w", ns, gpuadmitv1.ObjectName, err)
	}
	u = s.copies.newest(u)
	if err := Validate(u); err != nil {
		return nil, fmt.Errorf("%w; the namespace's GPU pods are refused until it is fixed or deleted", err)
	}
	return u, nil
}

// newerThan waits for the informer to hold a version of the object newer
// than refused (u, err: what it holds now), else reads the API server.
func (s *Store) newerThan(ctx context.Context, ns, refused string, u *gpuadmitv1.GPUReservationSet, err error) (*gpuadmitv1.GPUReservationSet, error) {
	deadline := time.NewTimer(catchUpWait)
	defer deadline.Stop()
	for err != nil || !resourceversion.Newer(u.ResourceVersion, refused) {
		changed := s.copies.next()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return s.get(ctx, s.api, ns)
		case <-changed:
		}
		u, err = s.get(ctx, s.client, ns)
	}
	return u, nil
}

func (s *Store) get(ctx context.Context, r client.Reader, ns string) (*gpuadmitv1.GPUReservationSet, error) {
	u := &gpuadmitv1.GPUReservationSet{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, u); err != nil {
		return nil, err
	}
	return u, nil
}

// write sets u's status to st (creating the object when u is nil) with
// u's resourceVersion, and remembers the object written.
func (s *Store) write(ctx context.Context, ns string, u *gpuadmitv1.GPUReservationSet, st gpuadmitv1.GPUReservationSetStatus) error {
	if u == nil {
		u = &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gpuadmitv1.ObjectName,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "gpuadmit"}}}
		if err := s.client.Create(ctx, u); err != nil {
			return err
		}
	} else {
		u = u.DeepCopy()
	}
	u.Status = st
	u.Status.ReservationCount = int32(len(u.Status.Reservations))
	if err := s.client.Status().Update(ctx, u); err != nil {
		return err
	}
	s.copies.remember(ns, u)
	return nil
}
