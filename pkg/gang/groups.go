package gang

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// GroupVersion and Resource of the PodGroup API.
const (
	GroupVersion = "scheduling.k8s.io/v1beta1"
	Resource     = "podgroups"
)

// Served reports whether the API server serves the PodGroup API (asked
// once, at start: a cluster that enables it later needs a restart of the
// webhook, which logs and reports that it does not read PodGroups).
func Served(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(GroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", GroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == Resource {
			return true, nil
		}
	}
	return false, nil
}

// Groups is the cluster's PodGroups as an informer holds them, trimmed to
// what gpuadmit reads (Group), and the PodGroups it saw deleted: a gang's
// hold ends when its PodGroup is deleted.
type Groups struct {
	informer toolscache.SharedIndexInformer

	mu      sync.Mutex
	deleted map[types.UID]time.Time // by the clock of now
	now     func() time.Time
	forget  time.Duration
}

// NewGroups returns the PodGroup informer of kube (cluster-wide list and
// watch); Start runs it. now is the replica's clock; a deletion is
// remembered for forget.
func NewGroups(kube kubernetes.Interface, now func() time.Time, forget time.Duration) (*Groups, error) {
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(Transform))
	g := &Groups{informer: f.Scheduling().V1beta1().PodGroups().Informer(), deleted: map[types.UID]time.Time{}, now: now, forget: forget}
	if _, err := g.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: g.onDelete}); err != nil {
		return nil, fmt.Errorf("watching PodGroups: %w", err)
	}
	return g, nil
}

// Transform keeps what gpuadmit reads of a PodGroup (the informer's
// transform): its name, namespace, UID, resourceVersion, deletion
// timestamp (a PodGroup being deleted waits, behind the API server's
// PodGroupProtection finalizer, for its pods to go: its gang has ended)
// and gang policy.
func Transform(obj any) (any, error) {
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: pg.Name, Namespace: pg.Namespace, UID: pg.UID,
		ResourceVersion: pg.ResourceVersion, DeletionTimestamp: pg.DeletionTimestamp}}
	if gp := pg.Spec.SchedulingPolicy.Gang; gp != nil {
		out.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: gp.MinCount}
	}
	return out, nil
}

// Start runs the informer until ctx ends (a controller-runtime Runnable).
func (g *Groups) Start(ctx context.Context) error {
	g.informer.Run(ctx.Done())
	return nil
}

// HasSynced reports whether the informer listed the PodGroups.
func (g *Groups) HasSynced() bool { return g.informer.HasSynced() }

// Get returns namespace ns's PodGroup name.
func (g *Groups) Get(ns, name string) (Group, bool, error) {
	if !g.informer.HasSynced() {
		return Group{}, false, errors.New("gpuadmit's PodGroup informer has not listed the PodGroups yet; create the pod again shortly")
	}
	obj, ok, err := g.informer.GetStore().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return Group{}, false, err
	}
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return Group{}, false, nil
	}
	out := Group{Namespace: pg.Namespace, Name: pg.Name, UID: pg.UID, Deleting: pg.DeletionTimestamp != nil}
	if gp := pg.Spec.SchedulingPolicy.Gang; gp != nil {
		out.MinCount = gp.MinCount
	}
	return out, true, nil
}

// Deleted reports whether the informer saw the PodGroup of UID uid
// deleted (within the last forget).
func (g *Groups) Deleted(uid types.UID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.deleted[uid]
	return ok
}

func (g *Groups) onDelete(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for uid, at := range g.deleted {
		if now.Sub(at) > g.forget {
			delete(g.deleted, uid)
		}
	}
	g.deleted[pg.UID] = now
}
