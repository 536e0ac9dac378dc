package reservation

import (
	"sync"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// Assumed keeps, by object (Key), the GPUReservationSet this replica wrote
// last until its informer delivers it (kube-scheduler's assume cache): a
// round that read the informer's older copy would only conflict. It also
// wakes the rounds that wait for the informer to deliver a newer version.
// The zero value is not usable: NewAssumed.
type Assumed struct {
	mu      sync.Mutex
	latest  map[string]*gpuadmitv1.GPUReservationSet
	changed chan struct{} // closed and replaced when the informer delivers an object
}

// NewAssumed returns an empty Assumed.
func NewAssumed() *Assumed {
	return &Assumed{latest: map[string]*gpuadmitv1.GPUReservationSet{}, changed: make(chan struct{})}
}

// Key names a GPUReservationSet in Assumed: a namespace's own object
// (gpuadmitv1.ObjectName) by its namespace, any other (a team's) by
// namespace/name.
func Key(ns, name string) string {
	if name == gpuadmitv1.ObjectName {
		return ns
	}
	return ns + "/" + name
}

// Assume keeps u as the object key (Key) this replica wrote last (nil:
// forget it).
func (a *Assumed) Assume(key string, u *gpuadmitv1.GPUReservationSet) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u == nil {
		delete(a.latest, key)
		return
	}
	a.latest[key] = u.DeepCopy()
}

// Newest returns u, or the copy this replica wrote of the same object when
// that is newer (resourceVersions of one object grow); it forgets the copy
// once u caught up, or when u is another object (recreated).
func (a *Assumed) Newest(u *gpuadmitv1.GPUReservationSet) *gpuadmitv1.GPUReservationSet {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := Key(u.Namespace, u.Name)
	mine := a.latest[key]
	if mine == nil {
		return u
	}
	if mine.UID == u.UID && resourceversion.Newer(mine.ResourceVersion, u.ResourceVersion) {
		return mine.DeepCopy()
	}
	delete(a.latest, key)
	return u
}

// Next returns a channel closed at the informer's next delivery.
func (a *Assumed) Next() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

// Delivered is told of each object the informer delivers: it wakes the
// waiters of Next.
func (a *Assumed) Delivered() {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.changed)
	a.changed = make(chan struct{})
}
