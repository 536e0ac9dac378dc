package feed

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
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
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
	// UpsertClusterQuota and DeleteClusterQuota take the GPUClusterQuotas
	// (team quotas), when Options.ClusterQuotas is set.
	UpsertClusterQuota(*gpuadmitv1.GPUClusterQuota)
	DeleteClusterQuota(name string)
}

// Informer is an informer run by someone else (the manager's cache, for
// gpuadmit's own kinds): the feed adds its handler and waits for it to
// process the initial list (NotSynced).
type Informer interface {
	AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// Options tune a Feed.
type Options struct {
	// Resync is the informers' resync period (0: none; the ledger does not
	// need one, every event carries the whole object).
	Resync time.Duration
	// Freshness configures the staleness check of the watches.
	Freshness FreshnessOptions
	// Log receives handler errors. The zero value discards.
	Log logr.Logger
	// PodConfig, when set, is the config of the pod watch's own client
	// (the API server the clientset of NewFeed talks to): it decodes
	// protobuf pods keeping only what podwire.PodTransform keeps (podwire.ListWatch),
	// which is most of a relist's decoding and allocation left out. nil:
	// pods are watched through the clientset, decoded whole.
	PodConfig *rest.Config
	// ClusterQuotas, when set, is the informer of the GPUClusterQuotas
	// (gpuadmit's own kind: the manager's cache runs it, as it runs the
	// GPUReservationSets'); the feed hands its events to the sink, and no
	// decision may be made before it listed them (NotSynced names it
	// "gpuclusterquotas"). nil: no team quota is watched.
	ClusterQuotas Informer
	// ReleaseLists, when set, returns a pod list's memory to the operating
	// system once the list is in the ledger (podfeed.go): the decoded list
	// is garbage then, and the Go heap would otherwise keep its pages (about
	// twice the list at a cold start) until its scavenger returns them.
	ReleaseLists bool
}

// Feed feeds a ledger from a pod watch of its own (podfeed.go), from Node,
// ResourceQuota and Namespace informers of its own SharedInformerFactory
// (its transforms slim the objects, so the factory is not shared with code
// that needs whole objects), and from the GPUClusterQuota informer it is
// handed (Options.ClusterQuotas).
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

// NewFeed creates the informers, installs the transforms and wires the
// handlers to sink. Nothing runs until Start.
func NewFeed(client kubernetes.Interface, sink Sink, opts Options) (*Feed, error) {
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
		{"nodes", core.Nodes().Informer(), NodeTransform, NodeHandler(sink, f.log)},
		{"resourcequotas", core.ResourceQuotas().Informer(), QuotaTransform(s), QuotaHandler(sink, f.log)},
		{"namespaces", core.Namespaces().Informer(), NamespaceTransform, NamespaceHandler(sink, f.log)},
	}
	probed := map[string]func() string{}
	if c := sink.Charger(); c != nil && len(c.Classes()) > 0 {
		res := f.factory.Resource().V1()
		watches = append(watches,
			watched{"resourceclaims", res.ResourceClaims().Informer(), ClaimTransform(c), ClaimHandler(sink, f.log)},
			watched{"resourceslices", res.ResourceSlices().Informer(), SliceTransform, SliceHandler(sink, f.log)},
			watched{"resourceclaimtemplates", res.ResourceClaimTemplates().Informer(), TemplateTransform(c), TemplateHandler(sink, f.log)},
			watched{"deviceclasses", res.DeviceClasses().Informer(), DeviceClassTransform, DeviceClassHandler(sink, f.log)})
		probed["resourceclaims"] = res.ResourceClaims().Informer().LastSyncResourceVersion
	}
	for _, w := range watches {
		if err := w.informer.SetTransform(w.transform); err != nil {
			return nil, fmt.Errorf("%s informer: %w", w.what, err)
		}
		if err := f.register(w.what, w.informer, w.handler); err != nil {
			return nil, err
		}
	}
	if opts.ClusterQuotas != nil {
		if err := f.register(ClusterQuotaWatch, opts.ClusterQuotas, ClusterQuotaHandler(sink, f.log)); err != nil {
			return nil, err
		}
	}
	var pods *toolscache.ListWatch
	if opts.PodConfig != nil {
		var err error
		if pods, err = podwire.ListWatch(opts.PodConfig, s); err != nil {
			return nil, err
		}
	}
	f.pods = newPodFeed(client, pods, sink, podwire.PodTransform(s), f.log.WithName("pods"))
	f.pods.release = opts.ReleaseLists
	probed["pods"] = f.pods.resourceVersion
	probed["nodes"] = core.Nodes().Informer().LastSyncResourceVersion
	probed["resourcequotas"] = core.ResourceQuotas().Informer().LastSyncResourceVersion
	probed["namespaces"] = core.Namespaces().Informer().LastSyncResourceVersion
	f.freshness = newFreshness(client, opts.Freshness, f.log, probed)
	return f, nil
}

// ClusterQuotaWatch is the name NotSynced gives the GPUClusterQuota watch.
const ClusterQuotaWatch = "gpuclusterquotas"

// register adds handler to informer; its registration joins the sync gate.
func (f *Feed) register(what string, informer Informer, handler toolscache.ResourceEventHandler) error {
	reg, err := informer.AddEventHandler(handler)
	if err != nil {
		return fmt.Errorf("%s informer: %w", what, err)
	}
	f.regs = append(f.regs, reg)
	f.names = append(f.names, what)
	return nil
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

// errUnexpected is a watched object of another type than the kind's.
var errUnexpected = errors.New("unexpected object type")

// NodeHandler applies node events to sink (tombstones included).
func NodeHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("node", sink.UpsertNode, sink.DeleteNode, log)
}

// namedHandler applies the events of a cluster-scoped kind: adds and
// updates to upsert, deletions (tombstones included) to del by name (a
// cluster-scoped object's key is its name, in no namespace).
func namedHandler[T any](what string, upsert func(T), del func(name string), log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namespacedHandler(what, upsert, func(_, name string) { del(name) }, log)
}

// ClusterQuotaHandler applies GPUClusterQuota events to sink (tombstones
// included).
func ClusterQuotaHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("gpuclusterquota", sink.UpsertClusterQuota, sink.DeleteClusterQuota, log)
}

// QuotaHandler applies ResourceQuota events to sink (tombstones included).
func QuotaHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namespacedHandler("resourcequota", sink.UpsertQuota, sink.DeleteQuota, log)
}
