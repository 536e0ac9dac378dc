package feed

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// The pod watch feeds the ledger through a queue of its own rather than a
// shared informer, so that the feed knows how far the ledger got:
//
//	list (initial or after a watch broke) ──ReplacedAll(rv)──▶ the ledger holds exactly the list: at rv
//	watch event (in resourceVersion order) ──────────────────▶ applied: at the event's resourceVersion
//	bookmark ────────────────────────────────────────────────▶ nothing new: at the bookmark's resourceVersion
//
// A shared informer hands its handlers a relist's changes in key order, one
// by one, so the largest resourceVersion a handler has seen is not a point
// up to which everything is applied (a pod later in key order may still be
// missing); here a list is applied whole before the feed's progress moves.
// The progress is what a replica publishes (and what reservations are
// removed by): every pod event up to it is in the ledger.
type podFeed struct {
	controller toolscache.Controller
	sink       Sink
	log        logr.Logger
	// progress is the resourceVersion the ledger holds every pod event up to.
	progress progress
	// release returns a list's memory once it is in the ledger
	// (Options.ReleaseLists).
	release bool
}

// newPodFeed lists and watches pods through pods, whose objects are
// slimmed already (podListWatch: a Pod or a PartialObjectMetadata, no
// transform), or through client, its pods slimmed by transform, when pods
// is nil.
func newPodFeed(client kubernetes.Interface, pods *toolscache.ListWatch, sink Sink, transform toolscache.TransformFunc, log logr.Logger) *podFeed {
	// The reflector drops watched objects of another type than objType's
	// (nil: none dropped), and transforms a watch list twice: once into
	// its temporary store, once more into the queue.
	var objType runtime.Object
	if pods != nil {
		transform = nil
	} else {
		objType = &corev1.Pod{}
		pods = &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().Pods("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return client.CoreV1().Pods("").Watch(ctx, o)
			},
		}
	}
	return newPodFeedFrom(toolscache.ToListWatcherWithWatchListSemantics(pods, client), objType, sink, transform, log)
}

// newPodFeedFrom feeds sink the pods of lw, of objType, transformed.
func newPodFeedFrom(lw toolscache.ListerWatcher, objType runtime.Object, sink Sink, transform toolscache.TransformFunc, log logr.Logger) *podFeed {
	f := &podFeed{sink: sink, log: log}
	f.progress.init()
	queue := toolscache.NewRealFIFOWithOptions(toolscache.RealFIFOOptions{
		Transformer: transform, AtomicEvents: true, EmitDeltaTypeBookmark: true, Name: "gpuadmit-pods"})
	f.controller = toolscache.New(&toolscache.Config{Queue: queue, ListerWatcher: lw, ObjectType: objType,
		ObjectDescription: "pods", Process: f.process})
	return f
}

// PodProcess is what the pod feed does with each item its queue pops (a
// list applied whole, a watch event, a bookmark), over sink, without a
// watch: the production pod path below client-go's queue, synchronous. The
// accounting's model test drives the ledger through it.
func PodProcess(sink Sink, log logr.Logger) toolscache.ProcessFunc {
	f := &podFeed{sink: sink, log: log}
	f.progress.init()
	return f.process
}

// run feeds the ledger until ctx ends.
func (f *podFeed) run(ctx context.Context) {
	f.controller.RunWithContext(ctx)
}

// HasSynced reports whether the initial list is in the ledger.
func (f *podFeed) HasSynced() bool { return f.controller.HasSynced() }

// resourceVersion is the feed's progress ("" before the initial list is in
// the ledger).
func (f *podFeed) resourceVersion() string {
	if !f.HasSynced() {
		return ""
	}
	return f.progress.get()
}

// process applies one popped item.
func (f *podFeed) process(obj any, _ bool) error {
	deltas, ok := obj.(toolscache.Deltas)
	if !ok {
		return fmt.Errorf("pod feed: unexpected item %T", obj)
	}
	for _, d := range deltas {
		apply, rv := f.delta(d)
		if apply == nil {
			continue
		}
		apply()
		f.advance(rv)
		if info, ok := d.Object.(toolscache.ReplacedAllInfo); ok {
			f.forget(info.Objects)
		}
	}
	return nil
}

// delta returns what applying d does and the resourceVersion the ledger is
// at once it is done ("": unknown, progress stays).
func (f *podFeed) delta(d toolscache.Delta) (func(), string) {
	switch d.Type {
	case toolscache.ReplacedAll:
		info, ok := d.Object.(toolscache.ReplacedAllInfo)
		if !ok {
			f.log.Error(errUnexpected, "pod feed: a list", "type", fmt.Sprintf("%T", d.Object))
			return nil, ""
		}
		pods := make([]metav1.Object, 0, len(info.Objects))
		for _, o := range info.Objects {
			switch p := o.(type) {
			case *corev1.Pod:
				pods = append(pods, p)
			case *metav1.PartialObjectMetadata:
				pods = append(pods, p) // the ledger makes it a Pod when it records it
			default:
				f.log.Error(errUnexpected, "pod feed: a list", "type", fmt.Sprintf("%T", o))
			}
		}
		return func() { f.sink.ReplacePods(pods) }, info.ResourceVersion
	case toolscache.Bookmark:
		info, _ := d.Object.(toolscache.BookmarkInfo)
		return func() {}, info.ResourceVersion
	case toolscache.Deleted:
		p := asPod(d.Object, f.log)
		if p == nil {
			return nil, ""
		}
		return func() { f.sink.DeletePod(p) }, p.ResourceVersion
	case toolscache.Added, toolscache.Updated, toolscache.Replaced, toolscache.Sync:
		p := asPod(d.Object, f.log)
		if p == nil {
			return nil, ""
		}
		return func() { f.sink.UpsertPod(p) }, p.ResourceVersion
	}
	return nil, ""
}

// forget drops a recorded list's objects: the queue's item (of which
// objects is a part) lives until process returns, so its slice is cleared
// for the objects to be garbage now; with release, the memory is
// returned to the operating system (a full collection: one per list, and
// a list is rare once the feed started: the initial one, and one after a
// watch that broke and could not resume).
func (f *podFeed) forget(objects []any) {
	clear(objects)
	if f.release {
		debug.FreeOSMemory()
	}
}

// advance moves the progress to rv (never back: a list's resourceVersion
// may be older than the last event of a watch that broke).
func (f *podFeed) advance(rv string) { f.progress.advance(rv) }

// asPod returns a pod event's object as a Pod (a PartialObjectMetadata of a
// pod without managed resources becomes a Pod with only its metadata).
func asPod(obj any, log logr.Logger) *corev1.Pod {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	switch p := obj.(type) {
	case *corev1.Pod:
		return p
	case *metav1.PartialObjectMetadata:
		return &corev1.Pod{ObjectMeta: p.ObjectMeta}
	}
	log.Error(errUnexpected, "pod feed", "type", fmt.Sprintf("%T", obj))
	return nil
}
