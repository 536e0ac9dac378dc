package workloadcheck

import (
	"strings"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// OwnCharge is what a workload's existing pods are charged, among the
// namespace's charges: the ledger records pods by name, not by owner, so a
// pod is the workload's when its name is one its controller gives (the
// workload's name, a dash, then what the controller appends: a
// StatefulSet's ordinal, a ReplicaSet's or Job's random suffix, a
// Deployment's ReplicaSet hash and suffix). A pod of another workload
// whose name starts the same is counted too: that only lowers the "pods
// will wait" warning's count; the hard-limit check reads no usage.
func OwnCharge(charges []ledger.Charge, name string) effective.Usage {
	own := effective.Usage{}
	prefix := name + "-"
	for _, c := range charges {
		if c.Kind != ledger.ChargePod || !strings.HasPrefix(c.Name, prefix) || c.State == effective.StateZero {
			continue
		}
		if sum, ok := own.Add(c.Used); ok {
			own = sum
		}
	}
	return own
}
