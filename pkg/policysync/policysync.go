package policysync

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/policysource"
	"github.com/gpuadmit/gpuadmit/policy"
)

// StatusAnnotation is set on every policy ConfigMap after each load:
// "active: revision R" or "rejected: why; still active: revision R".
const StatusAnnotation = "gpuadmit.io/policy-status"

// Engine is the policy engine a Sync loads sets into (*policy.Engine).
type Engine interface {
	// Load compiles and tests the built-in policies plus sources, and
	// activates them only when they pass.
	Load(ctx context.Context, sources ...policy.Source) error
	// Reject records a load that failed before reaching the engine.
	Reject(err error)
	Status() policy.Status
}

// Options are what a Sync is handed.
type Options struct {
	Kube kubernetes.Interface
	// Engine receives the sets loaded.
	Engine Engine
	// Namespace holds the policy ConfigMaps and the accepted one.
	Namespace string
	// Selector selects the policy ConfigMaps ("": none are read).
	Selector string
	// Dir is the policy directory ("": none).
	Dir string
	// Registry receives gpuadmit_policy_reloads_total.
	Registry prometheus.Registerer
	// Clock times the retries after a failed read (default the wall clock).
	Clock clock.Clock
	Log   logr.Logger
}

// New builds the Sync of o; nothing runs until Start.
func New(o Options) (*Sync, error) {
	pm, err := newPolicyMetrics(o.Registry)
	if err != nil {
		return nil, err
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Sync{kube: o.Kube, engine: o.Engine, namespace: o.Namespace, selector: o.Selector, dir: o.Dir,
		log: o.Log, metrics: pm, clock: clk}, nil
}

// policyMetrics count policy reloads by result.
type policyMetrics struct{ reloads *prometheus.CounterVec }

func newPolicyMetrics(reg prometheus.Registerer) (*policyMetrics, error) {
	m := &policyMetrics{reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuadmit_policy_reloads_total",
		Help: "Policy reloads from ConfigMaps or the policy directory, by result (activated, rejected).",
	}, []string{"result"})}
	if err := reg.Register(m.reloads); err != nil {
		return nil, fmt.Errorf("registering policy metrics: %w", err)
	}
	return m, nil
}

// Sync loads the built-in policies plus the policy directory and the
// label-selected ConfigMaps of the server's namespace, and reloads them when
// a ConfigMap changes. A load goes through the engine's test-then-activate
// path: a set that does not compile or whose tests fail (or run past their
// time or memory budget) is rejected and the active set stays; the
// rejection is logged, counted in
// gpuadmit_policy_reloads_total{result="rejected"}, and written in each
// ConfigMap's gpuadmit.io/policy-status annotation.
//
// A set activated is stored in the accepted ConfigMap
// (policysource.AcceptedConfigMap). A replica that starts while the
// cluster's set is rejected has no set of its own to keep: it activates the
// accepted set, compiled and tested again, which is what its peers run, or,
// when there is none or it fails, nothing, and stays unready with the
// reason. It never decides with the built-in policies alone while its
// peers run the operator's.
//
// A failure to read the sources (listing the ConfigMaps, reading the
// directory) changes nothing: the active set stays (an operator's deny rule
// never silently vanishes), the error is logged, counted
// (result="read-error") and written in the ConfigMaps' status annotation,
// and the read is retried with backoff. Before any set was active, a read
// failure activates nothing: the server stays unready rather than run
// without the operator's policies.
type Sync struct {
	kube      kubernetes.Interface
	engine    Engine
	namespace string
	selector  string
	dir       string
	log       logr.Logger
	metrics   *policyMetrics
	clock     clock.Clock
	lastHash  string
	// list reads the policy ConfigMaps (the informer's lister; tests fail it).
	list func() ([]*corev1.ConfigMap, error)
	// known are the ConfigMaps of the last successful list.
	known []*corev1.ConfigMap
	// retry bounds the backoff after a read failure (default 1s .. 1m).
	retryMin, retryMax time.Duration
	// fromAccepted: the active set came from the accepted ConfigMap
	// (fallback), not from the cluster's sources.
	fromAccepted bool
	// activeDigest is the policysource.Snapshot digest of the active set.
	activeDigest string
}

// Start implements manager.Runnable.
func (p *Sync) Start(ctx context.Context) error {
	if p.retryMin <= 0 {
		p.retryMin, p.retryMax = time.Second, time.Minute
	}
	if p.selector == "" {
		p.list = func() ([]*corev1.ConfigMap, error) { return nil, nil }
		return p.loop(ctx, nil)
	}
	sel, err := policysource.Selector(p.selector)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(p.kube, 0, informers.WithNamespace(p.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
	cms := factory.Core().V1().ConfigMaps()
	trigger := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	if _, err := cms.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		return fmt.Errorf("policy ConfigMap informer: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), cms.Informer().HasSynced) {
		return nil // stopped before the first list
	}
	if p.list == nil {
		p.list = func() ([]*corev1.ConfigMap, error) { return cms.Lister().ConfigMaps(p.namespace).List(sel) }
	}
	return p.loop(ctx, trigger)
}

// loop loads the policy set, then again on every trigger; after a read
// failure (or a load to retry, see reload) it retries with backoff.
func (p *Sync) loop(ctx context.Context, trigger <-chan struct{}) error {
	backoff := p.retryMin
	for {
		var retry <-chan time.Time
		if err := p.sync(ctx); err != nil {
			p.log.Error(err, "loading the policy set failed; the active policy set stays, retrying", "in", backoff)
			retry = p.clock.After(backoff)
			backoff = min(2*backoff, p.retryMax)
		} else {
			backoff = p.retryMin
		}
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
		case <-retry:
		}
	}
}

// sync lists the ConfigMaps and reloads; it returns read failures.
func (p *Sync) sync(ctx context.Context) error {
	list, err := p.list()
	if err != nil {
		err = fmt.Errorf("listing policy ConfigMaps: %w", err)
		p.readFailed(ctx, err)
		return err
	}
	// The accepted set is never a source of itself, whatever labels it has.
	list = slices.DeleteFunc(slices.Clone(list), func(cm *corev1.ConfigMap) bool { return cm.Name == policysource.AcceptedConfigMap })
	p.known = list
	return p.reload(ctx, list)
}

// readFailed reports a read failure without touching the active set.
func (p *Sync) readFailed(ctx context.Context, err error) {
	p.metrics.reloads.WithLabelValues("read-error").Inc()
	p.lastHash = "" // read again in full next time
	p.annotate(ctx, p.known, fmt.Sprintf("read error: %s; still active: %s", truncate(err.Error(), 1000), p.active()))
}

// reload loads the policy set made of the directory and the ConfigMaps
// (sorted by name) unless it is the set already loaded. A set activated is
// stored as the accepted set (persist). A rejected set leaves the active
// one in force; with none active (a replica starting while the cluster's
// set is rejected) the accepted set is activated instead (fallback), or
// none, and the replica stays unready; with a set active, that set stays
// (a rejected set never lowers the rules a replica runs). It returns an error when the load
// is to be retried: a source could not be read (policy.ErrRead), or the
// load failed in a way the same set may not fail again (retriable).
func (p *Sync) reload(ctx context.Context, cms []*corev1.ConfigMap) error {
	sources := policysource.Sources(p.dir, cms) // sorts cms by name
	hash := setHash(cms)
	if hash == p.lastHash && p.engine.Status().Revision != "" {
		return nil // only our own annotation changed
	}
	p.lastHash = hash
	snap, err := policysource.Read(ctx, sources)
	if err == nil {
		err = p.engine.Load(ctx, snap.PolicySources("")...)
	} else {
		p.engine.Reject(err) // in the engine's status, as a source Load failed to read
	}
	if errors.Is(err, policy.ErrRead) {
		p.readFailed(ctx, err)
		return err
	}
	if err == nil {
		p.metrics.reloads.WithLabelValues("activated").Inc() // the engine logs the activation
		rev := p.engine.Status().Revision
		p.annotate(ctx, cms, "active: revision "+rev)
		p.persist(ctx, snap, rev)
		return nil
	}
	p.metrics.reloads.WithLabelValues("rejected").Inc() // the engine logs the rejection
	var retry error
	if p.engine.Status().Revision == "" {
		retry = p.fallback(ctx, err)
	}
	if retriable(err) {
		retry = cmp.Or(retry, err)
	}
	if retry != nil {
		p.lastHash = "" // load again in full next time
	}
	p.annotate(ctx, cms, fmt.Sprintf("rejected: %s; still active: %s", truncate(err.Error(), 1000), p.active()))
	return retry
}

// retriable says that a load rejected with err may pass when retried: the
// tests ran past the memory budget (policy.ErrMemoryBudget: the heap's
// growth may have been another part's, such as a relist at start-up) or
// past their time limit (policy.ErrTestTimeout: the CPU may have been
// loaded, such as by a replica's start-up).
func retriable(err error) bool {
	return errors.Is(err, policy.ErrMemoryBudget) || errors.Is(err, policy.ErrTestTimeout)
}

// setHash identifies the ConfigMaps' names and data, whatever their order
// and annotations.
func setHash(cms []*corev1.ConfigMap) string {
	sorted := slices.SortedFunc(slices.Values(cms), func(a, b *corev1.ConfigMap) int { return cmp.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, cm := range sorted {
		b, _ := json.Marshal(cm.Data) // map keys are sorted
		fmt.Fprintf(h, "%s\x00%s\x00", cm.Name, b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
