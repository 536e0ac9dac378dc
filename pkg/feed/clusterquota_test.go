package feed

import (
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

func teamQuota(name string, gpus int64, rv string) *gpuadmitv1.GPUClusterQuota {
	return &gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{Namespaces: []string{"ml-dev"},
			Hard: corev1.ResourceList{"limits.nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}
}

// TestClusterQuotaWatchGatesAndFeeds: no decision may be made before the
// GPUClusterQuota watch listed (NotSynced names it: a team quota not yet
// known would be unenforced), and its adds, updates and deletions
// (tombstones included) reach the ledger.
func TestClusterQuotaWatchGatesAndFeeds(t *testing.T) {
	inf := &heldInformer{}
	l := newLedger(t)
	f, err := NewFeed(fake.NewClientset(), l, Options{ClusterQuotas: inf})
	if err != nil {
		t.Fatal(err)
	}
	inf.h.OnAdd(teamQuota("ml", 4, "1"), true)
	if !strings.Contains(f.NotSynced(), ClusterQuotaWatch) {
		t.Fatalf("NotSynced() = %q before the GPUClusterQuotas were listed; want it to name %s", f.NotSynced(), ClusterQuotaWatch)
	}
	inf.synced.Store(true)
	if strings.Contains(f.NotSynced(), ClusterQuotaWatch) {
		t.Fatalf("NotSynced() = %q once the GPUClusterQuotas were listed", f.NotSynced())
	}
	gpuLimit := func() int64 {
		q, ok := l.ClusterQuota("ml")
		if !ok || q.Limits[nvidia].GPU == nil {
			return -1
		}
		return q.Limits[nvidia].GPU.Value
	}
	if got := gpuLimit(); got != 4 {
		t.Fatalf("listed team quota: GPU limit %d, want 4", got)
	}
	inf.h.OnUpdate(teamQuota("ml", 4, "1"), teamQuota("ml", 2, "2"))
	if got := gpuLimit(); got != 2 {
		t.Fatalf("lowered team quota: GPU limit %d, want 2", got)
	}
	inf.h.OnDelete(teamQuota("ml", 2, "3"))
	if _, ok := l.ClusterQuota("ml"); ok {
		t.Fatal("a deletion did not forget the team quota")
	}
	// A tombstone (a deletion the watch missed, seen at a relist).
	inf.h.OnAdd(teamQuota("ml", 2, "4"), false)
	inf.h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ml", Obj: teamQuota("ml", 2, "4")})
	if _, ok := l.ClusterQuota("ml"); ok {
		t.Fatal("a tombstone did not forget the team quota")
	}
}

// heldInformer is an informer the test drives: it calls the handler
// itself, and says the list is in when synced is set.
type heldInformer struct {
	h      toolscache.ResourceEventHandler
	synced atomic.Bool
}

func (i *heldInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.h = h
	return heldRegistration{i}, nil
}

type heldRegistration struct{ i *heldInformer }

func (r heldRegistration) HasSynced() bool                          { return r.i.synced.Load() }
func (r heldRegistration) HasSyncedChecker() toolscache.DoneChecker { return nil }
