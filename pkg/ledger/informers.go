package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Sink receives the objects the feed watches; *Ledger implements it.
type Sink interface {
	Families() []effective.Family
	UpsertPod(*corev1.Pod)
	DeletePod(*corev1.Pod)
	// ReplacePods takes a list's pods: *corev1.Pod, or the
	// *metav1.PartialObjectMetadata of a pod without managed resources.
	ReplacePods([]metav1.Object)
	DeletePodByName(namespace, name string)
	UpsertNode(*corev1.Node)
	DeleteNode(name string)
	UpsertQuota(*corev1.ResourceQuota)
	DeleteQuota(namespace, name string)
	UpsertNamespace(*corev1.Namespace)
	DeleteNamespace(name string)
	// Charger governs the claims to watch (nil: none; no claim or slice
	// watch is started).
	Charger() *dra.Charger
	UpsertClaim(*resourcev1.ResourceClaim)
	DeleteClaim(namespace, name string)
	UpsertSlice(*resourcev1.ResourceSlice)
	DeleteSlice(name string)
	UpsertTemplate(*resourcev1.ResourceClaimTemplate)
	DeleteTemplate(namespace, name string)
	UpsertDeviceClass(*resourcev1.DeviceClass)
	DeleteDeviceClass(name string)
}

// FeedOptions tune a Feed.
type FeedOptions struct {
	// Resync is the informers' resync period (0: none; the ledger does not
	// need one, every event carries the whole object).
	Resync time.Duration
	// Freshness configures the staleness check of the watches.
	Freshness FreshnessOptions
	// Delay holds every event back this long before the ledger sees it
	// (fault injection for tests: a replica whose watch lags); 0 in
	// production.
	Delay time.Duration
	// Log receives handler errors. The zero value discards.
	Log logr.Logger
	// PodConfig, when set, is the config of the pod watch's own client
	// (the API server the clientset of NewFeed talks to): it decodes
	// protobuf pods keeping only what PodTransform keeps (podcodec.go),
	// which is most of a relist's decoding and allocation left out. nil:
	// pods are watched through the clientset, decoded whole.
	PodConfig *rest.Config
}

// Feed feeds a ledger from a pod watch of its own (podfeed.go) and from Node,
// ResourceQuota and Namespace informers of its own SharedInformerFactory
// (its transforms slim the objects, so the factory is not shared with code
// that needs whole objects).
type Feed struct {
	factory informers.SharedInformerFactory
	// pods feeds pod events in order and knows how far it got (podfeed.go).
	pods      *podFeed
	regs      []toolscache.ResourceEventHandlerRegistration
	names     []string
	sink      Sink
	log       logr.Logger
	freshness *freshness
	start     sync.Once
}

// ProtobufConfig returns a copy of cfg that asks the API server for
// protobuf (falling back to JSON), for the clientset of a Feed: Pods, Nodes,
// ResourceQuotas and Namespaces are built-in types, which the API server
// serves in protobuf. client-go's generated clients already prefer protobuf
// when cfg names no content type; this makes the choice explicit, so that
// a content type set elsewhere cannot turn a relist into JSON (about twice
// the decoding, tests/relist). Not for custom resources (GPUUsage), which
// the API server serves in JSON only.
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}

// NewFeed creates the informers, installs the transforms and wires the
// handlers to sink. Nothing runs until Start.
func NewFeed(client kubernetes.Interface, sink Sink, opts FeedOptions) (*Feed, error) {
	f := &Feed{
		factory: informers.NewSharedInformerFactory(client, opts.Resync),
		sink:    sink,
		log:     opts.Log,
	}
	if f.log.GetSink() == nil {
		f.log = logr.Discard()
	}
	s := sink.Families()
	core := f.factory.Core().V1()
	watches := []watched{
		{"nodes", core.Nodes().Informer(), NodeTransform, delayed(NodeHandler(sink, f.log), opts.Delay)},
		{"resourcequotas", core.ResourceQuotas().Informer(), QuotaTransform(s), delayed(QuotaHandler(sink, f.log), opts.Delay)},
		{"namespaces", core.Namespaces().Informer(), NamespaceTransform, delayed(NamespaceHandler(sink, f.log), opts.Delay)},
	}
	probed := map[string]func() string{}
	if c := sink.Charger(); c != nil && len(c.Classes()) > 0 {
		res := f.factory.Resource().V1()
		watches = append(watches,
			watched{"resourceclaims", res.ResourceClaims().Informer(), ClaimTransform(c), delayed(ClaimHandler(sink, f.log), opts.Delay)},
			watched{"resourceslices", res.ResourceSlices().Informer(), SliceTransform, delayed(SliceHandler(sink, f.log), opts.Delay)},
			watched{"resourceclaimtemplates", res.ResourceClaimTemplates().Informer(), TemplateTransform(c), delayed(TemplateHandler(sink, f.log), opts.Delay)},
			watched{"deviceclasses", res.DeviceClasses().Informer(), DeviceClassTransform, delayed(DeviceClassHandler(sink, f.log), opts.Delay)})
		probed["resourceclaims"] = res.ResourceClaims().Informer().LastSyncResourceVersion
	}
	for _, w := range watches {
		if err := w.informer.SetTransform(w.transform); err != nil {
			return nil, fmt.Errorf("%s informer: %w", w.what, err)
		}
		reg, err := w.informer.AddEventHandler(w.handler)
		if err != nil {
			return nil, fmt.Errorf("%s informer: %w", w.what, err)
		}
		f.regs = append(f.regs, reg)
		f.names = append(f.names, w.what)
	}
	var pods *toolscache.ListWatch
	if opts.PodConfig != nil {
		var err error
		if pods, err = podListWatch(opts.PodConfig, s); err != nil {
			return nil, err
		}
	}
	f.pods = newPodFeed(client, pods, sink, PodTransform(s), opts.Delay, f.log.WithName("pods"))
	probed["pods"] = f.pods.resourceVersion
	probed["nodes"] = core.Nodes().Informer().LastSyncResourceVersion
	probed["resourcequotas"] = core.ResourceQuotas().Informer().LastSyncResourceVersion
	probed["namespaces"] = core.Namespaces().Informer().LastSyncResourceVersion
	f.freshness = newFreshness(client, opts.Freshness, f.log, probed)
	return f, nil
}

// nodesLister is a Sink told when the node watch's initial list is in
// (Ledger.NodesListed).
type nodesLister interface{ NodesListed() }

// watched is one informer of a Feed.
type watched struct {
	what      string
	informer  toolscache.SharedIndexInformer
	transform toolscache.TransformFunc
	handler   toolscache.ResourceEventHandler
}

// Start runs the informers and the freshness check until ctx is done.
// Only the first call starts anything.
func (f *Feed) Start(ctx context.Context) {
	f.start.Do(func() {
		go f.pods.run(ctx)
		f.factory.Start(ctx.Done())
		if s, ok := f.sink.(nodesLister); ok && len(f.regs) > 0 {
			nodes := f.regs[0] // the first watch is the nodes'
			go func() {
				if toolscache.WaitForCacheSync(ctx.Done(), nodes.HasSynced) {
					s.NodesListed()
				}
			}()
		}
		go f.freshness.run(ctx, f.Synced)
		context.AfterFunc(ctx, f.factory.Shutdown)
	})
}

// NotSynced names the watches whose handlers have not processed their
// initial list yet ("" when all have): before that, the ledger under-counts
// and no decision may be made.
func (f *Feed) NotSynced() string {
	var missing []string
	if !f.pods.HasSynced() {
		missing = append(missing, "pods")
	}
	for i, r := range f.regs {
		if !r.HasSynced() {
			missing = append(missing, f.names[i])
		}
	}
	return strings.Join(missing, ", ")
}

// Synced reports whether every handler has processed its informer's
// initial list.
func (f *Feed) Synced() bool { return f.NotSynced() == "" }

// Stale describes the watches that have delivered nothing for longer than
// they should (see FreshnessOptions); "" when all are fresh.
func (f *Feed) Stale() string { return f.freshness.stale() }

// PodsResourceVersion is how far the ledger got in the pod watch: every pod
// event up to it is applied (the resourceVersion of the last list applied
// whole, of a watch event or of a bookmark; "" before the initial list is
// in the ledger).
func (f *Feed) PodsResourceVersion() string { return f.pods.resourceVersion() }

// WaitForPods returns once the ledger got to resourceVersion rv in the pod
// watch (PodsResourceVersion), or with ctx's error.
func (f *Feed) WaitForPods(ctx context.Context, rv string) error {
	return f.pods.progress.wait(ctx, rv)
}

// Freshness reports, per watched resource, whether it is stale (for metrics).
func (f *Feed) Freshness() map[string]bool { return f.freshness.perResource() }

// PodHandler applies pod events to sink. Deletions, including tombstones
// (DeletedFinalStateUnknown) of a relist, subtract what is stored.
func PodHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { withPod(obj, log, sink.UpsertPod) },
		UpdateFunc: func(_, obj any) { withPod(obj, log, sink.UpsertPod) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				switch t.Obj.(type) {
				case *corev1.Pod, *metav1.PartialObjectMetadata:
				default:
					ns, name, err := toolscache.SplitMetaNamespaceKey(t.Key)
					if err != nil {
						log.Error(err, "pod tombstone with an unreadable key", "key", t.Key)
						return
					}
					sink.DeletePodByName(ns, name)
					return
				}
				obj = t.Obj
			}
			withPod(obj, log, sink.DeletePod)
		},
	}
}

func withPod(obj any, log logr.Logger, f func(*corev1.Pod)) {
	switch p := obj.(type) {
	case *corev1.Pod:
		f(p)
	case *metav1.PartialObjectMetadata: // a pod without managed resources (PodTransform)
		f(&corev1.Pod{ObjectMeta: p.ObjectMeta})
	default:
		log.Error(errUnexpected, "pod handler", "type", fmt.Sprintf("%T", obj))
	}
}

var errUnexpected = errors.New("unexpected object type")

// NodeHandler applies node events to sink (tombstones included).
func NodeHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("node", sink.UpsertNode, sink.DeleteNode, log)
}

// namedHandler applies the events of a cluster-scoped kind: adds and
// updates to upsert, deletions (tombstones included) to del by name.
func namedHandler[T any](what string, upsert func(T), del func(name string), log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if o, ok := obj.(T); ok {
			upsert(o)
			return
		}
		log.Error(errUnexpected, what+" handler", "type", fmt.Sprintf("%T", obj))
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: func(obj any) {
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				log.Error(err, what+" delete: no key", "type", fmt.Sprintf("%T", obj))
				return
			}
			del(key)
		},
	}
}

// QuotaHandler applies ResourceQuota events to sink (tombstones included).
func QuotaHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namespacedHandler("resourcequota", sink.UpsertQuota, sink.DeleteQuota, log)
}

// delayed hands every event after the initial list to h d after it arrived,
// in order (d == 0: h itself). A test uses it to make one replica's watch
// lag behind the others'; the initial list is never held back, so "synced"
// still means that the ledger holds it.
func delayed(h toolscache.ResourceEventHandlerFuncs, d time.Duration) toolscache.ResourceEventHandler {
	if d <= 0 {
		return h
	}
	q := make(chan delayedEvent, 1<<16)
	go func() {
		for e := range q {
			time.Sleep(time.Until(e.at))
			e.do()
		}
	}()
	return &delayedHandler{h: h, d: d, q: q}
}

type delayedEvent struct {
	at time.Time
	do func()
}

type delayedHandler struct {
	h toolscache.ResourceEventHandlerFuncs
	d time.Duration
	q chan delayedEvent
}

func (d *delayedHandler) push(do func()) { d.q <- delayedEvent{at: time.Now().Add(d.d), do: do} }

func (d *delayedHandler) OnAdd(obj any, initial bool) {
	if initial {
		d.h.AddFunc(obj)
		return
	}
	d.push(func() { d.h.AddFunc(obj) })
}

func (d *delayedHandler) OnUpdate(old, obj any) { d.push(func() { d.h.UpdateFunc(old, obj) }) }

func (d *delayedHandler) OnDelete(obj any) { d.push(func() { d.h.DeleteFunc(obj) }) }
