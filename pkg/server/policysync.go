package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gpuadmit/gpuadmit/pkg/policysource"
	"github.com/gpuadmit/gpuadmit/policy"
)

// PolicyStatusAnnotation is set on every policy ConfigMap after each load:
// "active: revision R" or "rejected: why; still active: revision R".
const PolicyStatusAnnotation = "gpuadmit.io/policy-status"

// policySync loads the built-in policies plus the policy directory and the
// label-selected ConfigMaps of the server's namespace, and reloads them when
// a ConfigMap changes. A load goes through the engine's test-then-activate
// path: a set that does not compile or whose tests fail is rejected and the
// active set stays; the rejection is logged, counted in
// gpuadmit_policy_reloads_total{result="rejected"}, and written in each
// ConfigMap's gpuadmit.io/policy-status annotation.
//
// A failure to read the sources (listing the ConfigMaps, reading the
// directory) changes nothing: the active set stays (an operator's deny rule
// never silently vanishes), the error is logged, counted
// (result="read-error") and written in the ConfigMaps' status annotation,
// and the read is retried with backoff. Before any set was active, a read
// failure activates nothing: the server stays unready rather than run
// without the operator's policies.
type policySync struct {
	kube      kubernetes.Interface
	engine    *policy.Engine
	namespace string
	selector  string
	dir       string
	log       logr.Logger
	metrics   *policyMetrics
	lastHash  string
	// list reads the policy ConfigMaps (the informer's lister; tests fail it).
	list func() ([]*corev1.ConfigMap, error)
	// known are the ConfigMaps of the last successful list.
	known []*corev1.ConfigMap
	// retry bounds the backoff after a read failure (default 1s .. 1m).
	retryMin, retryMax time.Duration
}

// Start implements manager.Runnable.
func (p *policySync) Start(ctx context.Context) error {
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
// failure it retries with backoff.
func (p *policySync) loop(ctx context.Context, trigger <-chan struct{}) error {
	backoff := p.retryMin
	for {
		var retry <-chan time.Time
		if err := p.sync(ctx); err != nil {
			p.log.Error(err, "reading the policy sources failed; the active policy set stays, retrying", "in", backoff)
			retry = time.After(backoff)
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
func (p *policySync) sync(ctx context.Context) error {
	list, err := p.list()
	if err != nil {
		err = fmt.Errorf("listing policy ConfigMaps: %w", err)
		p.readFailed(ctx, err)
		return err
	}
	p.known = list
	return p.reload(ctx, list)
}

// readFailed reports a read failure without touching the active set.
func (p *policySync) readFailed(ctx context.Context, err error) {
	p.metrics.reloads.WithLabelValues("read-error").Inc()
	p.lastHash = "" // read again in full next time
	rev := p.engine.Status().Revision
	if rev == "" {
		rev = "none"
	}
	p.annotate(ctx, p.known, fmt.Sprintf("read error: %s; still active: revision %s", truncate(err.Error(), 1000), rev))
}

// reload loads the policy set made of the directory and the ConfigMaps
// (sorted by name) unless it is the set already loaded. It returns an error
// only when a source could not be read (see policy.ErrRead).
func (p *policySync) reload(ctx context.Context, cms []*corev1.ConfigMap) error {
	sources := policysource.Sources(p.dir, cms) // sorts cms by name
	h := sha256.New()
	for _, cm := range cms {
		b, _ := json.Marshal(cm.Data) // map keys are sorted
		fmt.Fprintf(h, "%s\x00%s\x00", cm.Name, b)
	}
	hash := hex.EncodeToString(h.Sum(nil))
	if hash == p.lastHash && p.engine.Status().Revision != "" {
		return nil // only our own annotation changed
	}
	p.lastHash = hash
	err := p.engine.Load(ctx, sources...)
	if errors.Is(err, policy.ErrRead) {
		p.readFailed(ctx, err)
		return err
	}
	st := p.engine.Status()
	status := "active: revision " + st.Revision
	if err != nil {
		p.metrics.reloads.WithLabelValues("rejected").Inc() // the engine logs the rejection
		if st.Revision == "" {
			// Nothing good was ever loaded: run the built-in policies.
			if berr := p.engine.Load(ctx); berr != nil {
				p.log.Error(berr, "the built-in policies do not load")
			}
			st = p.engine.Status()
		}
		status = fmt.Sprintf("rejected: %s; still active: revision %s", truncate(err.Error(), 1000), st.Revision)
	} else {
		p.metrics.reloads.WithLabelValues("activated").Inc() // the engine logs the activation
	}
	p.annotate(ctx, cms, status)
	return nil
}

// annotate writes status in each ConfigMap's status annotation (when it differs).
func (p *policySync) annotate(ctx context.Context, cms []*corev1.ConfigMap, status string) {
	for _, cm := range cms {
		if cm.Annotations[PolicyStatusAnnotation] == status {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{PolicyStatusAnnotation: status}}})
		if _, err := p.kube.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			p.log.Error(err, "writing the policy status annotation", "configmap", klog.KObj(cm))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
