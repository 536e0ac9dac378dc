package admitqueue

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

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
	s.copies.Delivered()
}

// caughtUp waits until this replica's pod watch reached removed, the point
// up to which reservations were removed from the object key (their
// pods are in its ledger, or were seen go), or ctx ends.
func (s *Store) caughtUp(ctx context.Context, key client.ObjectKey, removed string) error {
	if !resourceversion.Valid(removed) {
		return nil
	}
	if err := s.watch.WaitForPods(ctx, removed); err != nil {
		return fmt.Errorf("this replica's pod watch (at resourceVersion %s) is behind the reservations other replicas removed from GPUReservationSet %s (through %s): %w",
			s.watch.PodsResourceVersion(), key, removed, err)
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
	u, err := s.readObject(ctx, nsObject(ns), refused)
	if err != nil || u == nil {
		return nil, err
	}
	if err := reservation.Validate(u); err != nil {
		return nil, fmt.Errorf("%w; the namespace's GPU pods are refused until it is fixed or deleted", err)
	}
	return u, nil
}

// nsObject is the key of namespace ns's own GPUReservationSet.
func nsObject(ns string) client.ObjectKey {
	return client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}
}

// readObject reads the GPUReservationSet key as read does (nil: none),
// unvalidated.
func (s *Store) readObject(ctx context.Context, key client.ObjectKey, refused string) (*gpuadmitv1.GPUReservationSet, error) {
	u, err := s.get(ctx, s.client, key)
	if refused != "" {
		u, err = s.newerThan(ctx, key, refused, u, err)
	}
	switch {
	case apierrors.IsNotFound(err):
		s.copies.Assume(reservation.Key(key.Namespace, key.Name), nil)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading GPUReservationSet %s: %w", key, err)
	}
	return s.copies.Newest(u), nil
}

// newerThan waits for the informer to hold a version of the object newer
// than refused (u, err: what it holds now), else reads the API server.
func (s *Store) newerThan(ctx context.Context, key client.ObjectKey, refused string, u *gpuadmitv1.GPUReservationSet, err error) (*gpuadmitv1.GPUReservationSet, error) {
	deadline := s.opts.Clock.NewTimer(catchUpWait)
	defer deadline.Stop()
	for !newer(u, err, refused) {
		changed := s.copies.Next()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C():
			return s.get(ctx, s.api, key)
		case <-changed:
		}
		u, err = s.get(ctx, s.client, key)
	}
	return u, nil
}

// newer reports whether u (read with err) is newer than the refused
// write's resourceVersion; after a refused create ("0"), any object is.
func newer(u *gpuadmitv1.GPUReservationSet, err error, refused string) bool {
	return err == nil && (refused == "0" || resourceversion.Newer(u.ResourceVersion, refused))
}

func (s *Store) get(ctx context.Context, r client.Reader, key client.ObjectKey) (*gpuadmitv1.GPUReservationSet, error) {
	u := &gpuadmitv1.GPUReservationSet{}
	if err := r.Get(ctx, key, u); err != nil {
		return nil, err
	}
	return u, nil
}

// write sets u's status to st (creating the object when u is nil) with
// u's resourceVersion, and remembers the object written.
func (s *Store) write(ctx context.Context, key client.ObjectKey, u *gpuadmitv1.GPUReservationSet, st gpuadmitv1.GPUReservationSetStatus) error {
	if u == nil {
		u = &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
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
	s.copies.Assume(reservation.Key(key.Namespace, key.Name), u)
	return nil
}
