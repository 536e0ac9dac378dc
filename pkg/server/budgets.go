package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/election"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// budgetSink feeds the budgets' tracker the pod and namespace events the
// ledger gets, beside it (the ledger first): the feed's Sink.
type budgetSink struct {
	*ledger.Ledger
	budgets *budget.Tracker
}

func (s budgetSink) UpsertPod(p *corev1.Pod) { s.Ledger.UpsertPod(p); s.budgets.UpsertPod(p) }
func (s budgetSink) DeletePod(p *corev1.Pod) { s.Ledger.DeletePod(p); s.budgets.DeletePod(p) }
func (s budgetSink) ReplacePods(pods []metav1.Object) {
	s.Ledger.ReplacePods(pods)
	s.budgets.ReplacePods(pods)
}

func (s budgetSink) DeletePodByName(ns, name string) {
	s.Ledger.DeletePodByName(ns, name)
	s.budgets.DeletePodByName(ns, name)
}

func (s budgetSink) UpsertClaim(c *resourcev1.ResourceClaim) {
	s.Ledger.UpsertClaim(c)
	s.budgets.UpsertClaim(c)
}

func (s budgetSink) DeleteClaim(ns, name string) {
	s.Ledger.DeleteClaim(ns, name)
	s.budgets.DeleteClaim(ns, name)
}

func (s budgetSink) UpsertNamespace(ns *corev1.Namespace) {
	s.Ledger.UpsertNamespace(ns)
	s.budgets.UpsertNamespace(ns)
}

func (s budgetSink) DeleteNamespace(name string) {
	s.Ledger.DeleteNamespace(name)
	s.budgets.DeleteNamespace(name)
}

// newBudgets builds the budgets' tracker (every replica) beside the
// ledger, and the sink that feeds both.
func (s *Server) newBudgets() budgetSink {
	b := budgetSettingsOf(s.opts)
	s.Budgets = budget.NewTracker(budget.Options{Families: s.Ledger.Families(), Users: s.stamper, Claims: s.Ledger, Sizes: s.Ledger, Clock: s.opts.Clock,
		Tolerance: b.tolerance, RollingBuckets: b.rollingBuckets, CheckpointInterval: b.interval,
		Log: s.opts.Log.WithName("budgets")})
	return budgetSink{Ledger: s.Ledger, budgets: s.Budgets}
}

// watchBudgets hands the tracker the GPUBudgets and GPUClusterBudgets
// (gpuadmit's own kinds, watched by the manager's cache).
func (s *Server) watchBudgets() error {
	ctx := context.Background()
	gb, err := s.mgr.GetCache().GetInformer(ctx, &gpuadmitv1.GPUBudget{}, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the GPUBudget resource (is its CRD installed?): %w", err)
	}
	gcb, err := s.mgr.GetCache().GetInformer(ctx, &gpuadmitv1.GPUClusterBudget{}, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the GPUClusterBudget resource (is its CRD installed?): %w", err)
	}
	t := s.Budgets
	upsert := func(obj any) {
		switch o := obj.(type) {
		case *gpuadmitv1.GPUBudget:
			t.UpsertBudget(o)
		case *gpuadmitv1.GPUClusterBudget:
			t.UpsertClusterBudget(o)
		}
	}
	remove := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *gpuadmitv1.GPUBudget:
			t.DeleteBudget(o.Namespace, o.Name)
		case *gpuadmitv1.GPUClusterBudget:
			t.DeleteClusterBudget(o.Name)
		}
	}
	h := toolscache.ResourceEventHandlerFuncs{AddFunc: upsert, UpdateFunc: func(_, o any) { upsert(o) }, DeleteFunc: remove}
	s.budgetsSynced, err = registerBudgetHandlers(h, map[string]handlerSource{"GPUBudget": gb, "GPUClusterBudget": gcb})
	return err
}

// handlerSource is what registerBudgetHandlers needs of an informer.
type handlerSource interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
	HasSynced() bool
}

// registerBudgetHandlers adds h to each informer and returns what
// BudgetsSynced waits for: each registration's HasSynced, not the
// informer's (the informer has synced once its store holds the initial
// list, before h has delivered it to the tracker: admission would read a
// budget-less tracker for that moment).
func registerBudgetHandlers(h toolscache.ResourceEventHandler, infs map[string]handlerSource) ([]toolscache.InformerSynced, error) {
	var synced []toolscache.InformerSynced
	for what, inf := range infs {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", what, err)
		}
		synced = append(synced, reg.HasSynced)
	}
	return synced, nil
}

// BudgetsSynced reports whether both budget kinds' initial lists are in
// the tracker.
func (s *Server) BudgetsSynced() bool {
	for _, synced := range s.budgetsSynced {
		if !synced() {
			return false
		}
	}
	return true
}

// electBudgets runs the budgets' checkpointer on the replica elected
// through the Lease gpuadmit-budgets.
func (s *Server) electBudgets(kube kubernetes.Interface) error {
	b := budgetSettingsOf(s.opts)
	cp := budget.NewCheckpointer(budget.CheckpointerOptions{Tracker: s.Budgets, Client: s.mgr.GetClient(),
		Reader: s.mgr.GetAPIReader(), Identity: s.opts.Replica, Interval: b.interval,
		WarnPercents: b.warnPercents, Recorder: s.mgr.GetEventRecorderFor("gpuadmit-budgets"), //nolint:staticcheck // the events/v1 recorder needs a broadcaster of its own
		Clock: s.opts.Clock, Log: s.opts.Log.WithName("budgets")})
	if err := s.mgr.Add(&election.Elected{Run: cp.Run, Kube: kube, Namespace: s.opts.Namespace, Name: budget.LeaseName,
		Identity: s.opts.Replica, Log: s.opts.Log.WithName("budgets")}); err != nil {
		return fmt.Errorf("adding the budgets' checkpointer: %w", err)
	}
	return nil
}

// budgetSettings is the configuration's budgets section.
type budgetSettings struct {
	interval, tolerance time.Duration
	rollingBuckets      int
	warnPercents        []int64
}

// budgetSettingsOf reads the budgets section (defaulted by pkg/config; an
// unset key leaves the tracker's own default).
func budgetSettingsOf(o Options) budgetSettings {
	var out budgetSettings
	b := o.Config.Budgets
	if b == nil {
		return out
	}
	if b.CheckpointInterval != nil {
		out.interval = b.CheckpointInterval.Duration
	}
	if b.ClockTolerance != nil {
		out.tolerance = b.ClockTolerance.Duration
	}
	if b.RollingBuckets != nil {
		out.rollingBuckets = int(*b.RollingBuckets)
	}
	out.warnPercents = b.WarnPercents
	return out
}

// nearPercent is the lowest of budgets.warnPercents, where a budget's
// OpenReports result turns to warn (0: the writer's default; none
// configured: never).
func nearPercent(o Options) int64 {
	p := budgetSettingsOf(o).warnPercents
	switch {
	case p == nil:
		return 0
	case len(p) == 0:
		return 101
	}
	return slices.Min(p)
}
