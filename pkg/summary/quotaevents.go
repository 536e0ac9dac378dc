package summary

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// The reasons of the Warning Events about a ResourceQuota.
const (
	// ReasonUngovernedQuotaKey: a limits. key of a resource no governed
	// device family has; nothing enforces it.
	ReasonUngovernedQuotaKey = "UngovernedQuotaKey"
	// ReasonQuotaValueNotAsWritten: a value enforced other than as written
	// (bytes on a memory key, not a whole number: rounded down) or not at
	// all (negative: the dimension blocks).
	ReasonQuotaValueNotAsWritten = "QuotaValueNotAsWritten"
)

// Recorder records Warning Events (events.Recorder).
type Recorder interface {
	Warn(ctx context.Context, regarding corev1.ObjectReference, reason, message string)
}

// quotaEvents records a Warning Event on a ResourceQuota for each of its
// problems (ledger.ProblemQuota, ledger.ProblemUngoverned) not recorded
// before in this term of the election: one Event per problem and quota,
// not one per round; a problem fixed and made again is recorded again.
// reported is the set of the problems recorded, replaced by this round's.
func (s *Summarizer) quotaEvents(ctx context.Context, snap ledger.Snapshot) {
	if s.Events == nil {
		return
	}
	now := map[ledger.Problem]bool{}
	for _, n := range snap.Namespaces {
		for _, p := range n.Problems {
			reason := ReasonQuotaValueNotAsWritten
			switch {
			case p.Kind == ledger.ProblemUngoverned:
				reason = ReasonUngovernedQuotaKey
			case p.Kind != ledger.ProblemQuota || p.Key == "":
				continue
			}
			now[p] = true
			if s.reported[p] {
				continue
			}
			s.Events.Warn(ctx, corev1.ObjectReference{APIVersion: "v1", Kind: "ResourceQuota", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
				reason, p.Key+" "+quoted(p.Value)+": "+p.Message)
		}
	}
	s.reported = maps.Clone(now)
}

func quoted(v string) string { return `"` + v + `"` }
