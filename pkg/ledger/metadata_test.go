package ledger

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
)

// TestPodsWithoutManagedResourcesAsMetadata: the informer keeps a pod
// without managed resources as a PartialObjectMetadata (PodTransform); it
// must still end what a GPU pod of the same name left behind when a relist
// shows the name taken by a new pod (deleted and recreated while the watch
// was down), and its own tombstone must not touch another pod's charge.
func TestPodsWithoutManagedResourcesAsMetadata(t *testing.T) {
	tr := podwire.PodTransform(newLedger(t).Families())
	slim := func(b *testpod.Builder) any {
		t.Helper()
		out, err := tr(b.Build())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	l := newLedger(t)
	apply := func(typ toolscache.DeltaType, obj any) { podDelta(t, l, typ, obj) }
	apply(toolscache.Added, slim(seedPod().UID("uid-gpu").InitRunning("convert-weights")))
	if s := l.Namespace("team-a", nil); nvOnly(t, s.Used).MemMiB != 20480 || s.Pods != 1 {
		t.Fatalf("the GPU pod is not charged: %+v", s.Used)
	}
	other := slim(testpod.New("web").NS("team-a").UID("uid-web").App("c", testpod.CPU("1")))
	if _, ok := other.(*metav1.PartialObjectMetadata); !ok {
		t.Fatalf("a pod without managed resources slimmed to %T", other)
	}
	apply(toolscache.Added, other)
	apply(toolscache.Deleted, toolscache.DeletedFinalStateUnknown{Key: "team-a/web", Obj: other})
	if s := l.Namespace("team-a", nil); nvOnly(t, s.Used).MemMiB != 20480 || s.Pods != 1 {
		t.Fatalf("another pod's add and tombstone changed the charge: %+v, %d pods", s.Used, s.Pods)
	}
	// The relist shows llm-server recreated without GPUs (another UID).
	apply(toolscache.Updated, slim(testpod.New("llm-server").NS("team-a").UID("uid-cpu").App("c", testpod.CPU("1"))))
	if s := l.Namespace("team-a", nil); !s.Used.IsZero() || s.Pods != 0 || !deviceUsed(l, "node1", "GPU-0").IsZero() {
		t.Fatalf("the replaced GPU pod is still charged: %+v, %d pods", s.Used, s.Pods)
	}
}
