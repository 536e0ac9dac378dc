package source

import (
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	configv1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// BudgetTracker tracks the budgets bs (each resuming from its status's
// checkpoint, as a replica that has just taken over) over the namespaces
// and pods src read with its last ledger, charged as ch says, observing at
// clk, with the configuration's budgets section cfg: the webhook's
// numbers for the same state. nil when src read no budget.
func BudgetTracker(src Source, bs *clusterstate.Budgets, ch Charging, cfg *configv1.Budgets, clk clock.PassiveClock) *budget.Tracker {
	objs, led := objectsOf(src)
	if bs.Empty() || objs == nil {
		return nil
	}
	opts := budget.Options{Families: ch.Families, Clock: clk, Log: logr.Discard()}
	if led != nil {
		opts.Sizes = led
	}
	if cfg != nil { // as the webhook's tracker: the configuration's budgets section
		if cfg.ClockTolerance != nil {
			opts.Tolerance = cfg.ClockTolerance.Duration
		}
		if cfg.RollingBuckets != nil {
			opts.RollingBuckets = int(*cfg.RollingBuckets)
		}
		if cfg.CheckpointInterval != nil {
			opts.CheckpointInterval = cfg.CheckpointInterval.Duration
		}
	}
	if u := stateUsers(); u != nil {
		opts.Users = u
	}
	t := budget.NewTracker(opts)
	for _, ns := range objs.Namespaces {
		t.UpsertNamespace(ns)
	}
	for _, b := range bs.Namespaced {
		t.UpsertBudget(b)
	}
	for _, b := range bs.Cluster {
		t.UpsertClusterBudget(b)
	}
	for _, p := range objs.Pods {
		t.UpsertPod(p)
	}
	return t
}

// objectsOf are the objects src read with its last ledger, and that
// ledger (nil: none).
func objectsOf(src Source) (*manifest.Objects, *ledger.Ledger) {
	switch s := src.(type) {
	case live:
		if s.read != nil {
			return s.read.objects, s.read.ledger
		}
	case Dump:
		if s.read != nil {
			return s.read.objects, s.read.ledger
		}
	}
	return nil, nil
}
