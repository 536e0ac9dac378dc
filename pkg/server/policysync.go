package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

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
type policySync struct {
	kube      kubernetes.Interface
	engine    *policy.Engine
	namespace string
	selector  string
	dir       string
	log       logr.Logger
	metrics   *policyMetrics
	lastHash  string
}

// Start implements manager.Runnable.
func (p *policySync) Start(ctx context.Context) error {
	if p.selector == "" {
		p.reload(ctx, nil)
		<-ctx.Done()
		return nil
	}
	sel, err := labels.Parse(p.selector)
	if err != nil {
		return fmt.Errorf("policy ConfigMap selector %q: %w", p.selector, err)
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
	for {
		list, err := cms.Lister().ConfigMaps(p.namespace).List(sel)
		if err != nil {
			p.log.Error(err, "listing policy ConfigMaps")
		}
		p.reload(ctx, list)
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
		}
	}
}

// reload loads the policy set made of the directory and the ConfigMaps
// (sorted by name) unless it is the set already loaded.
func (p *policySync) reload(ctx context.Context, cms []*corev1.ConfigMap) {
	slices.SortFunc(cms, func(a, b *corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	var sources []policy.Source
	h := sha256.New()
	if p.dir != "" {
		sources = append(sources, policy.Dir(p.dir))
	}
	for _, cm := range cms {
		sources = append(sources, policy.Map("configmap "+cm.Namespace+"/"+cm.Name, cm.Data))
		b, _ := json.Marshal(cm.Data) // map keys are sorted
		fmt.Fprintf(h, "%s\x00%s\x00", cm.Name, b)
	}
	hash := hex.EncodeToString(h.Sum(nil))
	if hash == p.lastHash && p.engine.Status().Revision != "" {
		return // only our own annotation changed
	}
	p.lastHash = hash
	err := p.engine.Load(ctx, sources...)
	st := p.engine.Status()
	status := "active: revision " + st.Revision
	if err != nil {
		p.metrics.reloads.WithLabelValues("rejected").Inc()
		p.log.Error(err, "policy set rejected; the previous set stays active", "activeRevision", st.Revision)
		if st.Revision == "" {
			// Nothing good was ever loaded: run the built-in policies.
			if berr := p.engine.Load(ctx); berr != nil {
				p.log.Error(berr, "the built-in policies do not load")
			}
			st = p.engine.Status()
		}
		status = fmt.Sprintf("rejected: %s; still active: revision %s", truncate(err.Error(), 1000), st.Revision)
	} else {
		p.metrics.reloads.WithLabelValues("activated").Inc()
		p.log.Info("policy set active", "revision", st.Revision, "modules", len(st.Modules), "tests", st.Tests)
	}
	for _, cm := range cms {
		if cm.Annotations[PolicyStatusAnnotation] == status {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{PolicyStatusAnnotation: status}}})
		if _, err := p.kube.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			p.log.Error(err, "writing the policy status annotation", "configmap", cm.Namespace+"/"+cm.Name)
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
