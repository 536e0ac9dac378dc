package feed

import (
	"runtime"
	"testing"
	"weak"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// TestPodListIsGarbageOnceRecorded: while the queue's item still holds a
// list (it does until process returns, when the feed returns the list's
// memory), the list's objects are garbage once the ledger recorded them:
// only what the ledger keeps stays.
func TestPodListIsGarbageOnceRecorded(t *testing.T) {
	for _, release := range []bool{false, true} {
		l := newLedger(t)
		f := &podFeed{sink: l, log: testr.New(t), release: release}
		f.progress.init()
		plain := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-web", ResourceVersion: "7"}}
		gpu := testpod.New("train").NS("ns").UID("u-train").RV("8").App("c", testpod.GPU(1), testpod.Mem(1024)).Build()
		weakPlain, weakGPU := weak.Make(plain), weak.Make(gpu)
		items := toolscache.Deltas{{Type: toolscache.ReplacedAll, Object: toolscache.ReplacedAllInfo{ResourceVersion: "9", Objects: []any{plain, gpu}}}}
		if err := f.process(items, true); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		if weakPlain.Value() != nil || weakGPU.Value() != nil {
			t.Errorf("release %v: the list's objects are still reachable from the queue's item after they were recorded", release)
		}
		runtime.KeepAlive(items) // the queue's item outlives the processing
		if !l.Knows("u-web") || l.Stats().Pods != 1 || f.progress.get() != "9" {
			t.Errorf("release %v: knows u-web %v, %d pods recorded, at %q; want true, 1, 9", release, l.Knows("u-web"), l.Stats().Pods, f.progress.get())
		}
	}
}
