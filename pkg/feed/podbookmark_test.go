package feed

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
)

// initialEventsEnd is the annotation the API server sets on the bookmark
// that ends a watch's initial events; anyone who may edit a pod may set it
// there too, up to 256 KiB.
const initialEventsEnd = metav1.InitialEventsAnnotationKey

func bookmarkPod(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{initialEventsEnd: "true"}}}
}

// listSink is a ledger that keeps the lists it is handed.
type listSink struct {
	*ledger.Ledger
	mu    sync.Mutex
	lists [][]metav1.Object
}

func (s *listSink) ReplacePods(ps []metav1.Object) {
	s.mu.Lock()
	s.lists = append(s.lists, ps)
	s.mu.Unlock()
	s.Ledger.ReplacePods(ps)
}

// TestWatchListEndsWithSlimmedPods: the pod feed without the pod client
// (the informer transform's path) streams the initial pods as a watch
// list; pods carrying the initial-events annotation ("true" on a GPU pod
// and on a plain one) neither end it early nor keep the annotation, and
// the bookmark that carries it ends it: the feed syncs at the bookmark's
// resourceVersion, the pods recorded without it.
func TestWatchListEndsWithSlimmedPods(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	pods := []*corev1.Pod{
		testpod.New("plain").NS("ns").UID("u1").RV("5").App("a").Build(),
		testpod.New("gpu").NS("ns").UID("u2").RV("6").App("a", gpu(1), mem(1024)).Build(),
	}
	for _, p := range pods {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, initialEventsEnd, "true")
	}
	var watchList atomic.Bool
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			t.Error("listed: the reflector did not stream a watch list")
			return &corev1.PodList{}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(len(pods)+1, false)
			if o.SendInitialEvents != nil && *o.SendInitialEvents && watchList.CompareAndSwap(false, true) {
				for _, p := range pods {
					w.Add(p.DeepCopy())
				}
				w.Action(watch.Bookmark, bookmarkPod("7"))
			}
			return w, nil
		},
	}
	sink := &listSink{Ledger: newLedger(t)}
	f := newPodFeedFrom(lw, &corev1.Pod{}, sink, podwire.PodTransform(fams), testr.New(t))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go f.run(ctx)
	eventually(ctx, t, "the feed synced at the bookmark", func() bool { return f.resourceVersion() == "7" })
	if !watchList.Load() {
		t.Fatal("no watch list was asked for")
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.lists) != 1 || len(sink.lists[0]) != len(pods) {
		t.Fatalf("lists handed to the ledger: %v", sink.lists)
	}
	for _, p := range sink.lists[0] {
		if _, kept := p.GetAnnotations()[initialEventsEnd]; kept {
			t.Errorf("pod %s recorded with the initial-events annotation", p.GetName())
		}
	}
	if s := sink.Namespace("ns", nil); s.Pods != 1 || nvOnly(t, s.Used).MemMiB != 1024 {
		t.Errorf("after the watch list: %d pods, %v", s.Pods, s.Used)
	}
}
