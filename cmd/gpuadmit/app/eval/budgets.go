package eval

import (
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
)

// trackBudgets tracks the GPU-hour budgets the source read with its
// ledger, as a replica does (each budget's checkpoint, the pods' own
// timestamps): the decision is then held by them as the webhook's is.
// Reading the cluster, only the pods of the namespaces decided in are
// read: a GPUClusterBudget's other namespaces' burn since its last
// checkpoint is not counted, which is said.
func (e *Evaluation) trackBudgets(ch source.Charging) {
	bs := e.Source.Budgets()
	if e.Setup.Cfg == nil {
		return
	}
	e.budgets = source.BudgetTracker(e.Source, bs, ch, e.Setup.Cfg.Budgets, e.clock())
	if e.budgets == nil {
		return
	}
	if _, dump := e.Source.(source.Dump); !dump && len(bs.Cluster) > 0 {
		e.Warn("only the pods of the namespaces decided in were read: a GPUClusterBudget's burn in its other namespaces " +
			"since its last checkpoint is not counted")
	}
}

// clock is e's clock, the real one unless set.
func (e *Evaluation) clock() clock.PassiveClock {
	if e.Clock == nil {
		return clock.RealClock{}
	}
	return e.Clock
}
