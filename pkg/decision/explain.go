package decision

import (
	"context"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
)

// Explainer evaluates like Evaluator and also tells which rules produced
// each message; *policy.Engine satisfies it. Decide uses it for a Request
// with Explain set, when the evaluator has it.
type Explainer interface {
	Explain(ctx context.Context, input ast.Value) (policy.Output, error)
}

// Explanation tells why a decision came out as it did: which rule produced
// each message, and where the namespace stands against each of its limits.
type Explanation struct {
	Denials  []Explained `json:"denials"`
	Warnings []Explained `json:"warnings"`
	// Limits are the namespace's limits, each with the usage it would have
	// after this pod.
	Limits []LimitCheck `json:"limits"`
	// Budgets are the GPU-hour budgets of the namespace against the
	// request, one per budget and resource it burns.
	Budgets []BudgetCheck `json:"budgets,omitempty"`
}

// Explained is a message and the rules that produced it, the rule that made
// it first (file:line in its source), then those that passed it on.
type Explained struct {
	Message string          `json:"message"`
	Rules   []policy.Origin `json:"rules"`
}

// LimitCheck is one limit against the namespace's (or a team's) usage
// after this pod: After = Used + Reserved + Pod (MiB for memory); Exceeded
// when After is above Limit and the pod asks for some of the resource.
type LimitCheck struct {
	Family   string `json:"family"`
	Resource string `json:"resource"`
	Used     int64  `json:"used"`
	Reserved int64  `json:"reserved"`
	Pod      int64  `json:"pod"`
	After    int64  `json:"after"`
	Limit    int64  `json:"limit"`
	Quota    string `json:"quota"`
	Key      string `json:"key"`
	Exceeded bool   `json:"exceeded"`
	// Scopes are a scoped quota's: Used is what its pods use.
	Scopes []string `json:"scopes,omitempty"`
	// Kind is the kind of the quota: "" for a ResourceQuota,
	// KindClusterQuota for a team quota, whose Used and Reserved are the
	// team's over Members (and, with User, that user's alone: a
	// spec.perUser limit).
	Kind    string   `json:"kind,omitempty"`
	Members []string `json:"members,omitempty"`
	User    string   `json:"user,omitempty"`
}

// KindClusterQuota is LimitCheck.Kind of a team quota's limit.
const KindClusterQuota = "GPUClusterQuota"

// explain builds the explanation of out for the document doc.
func (d *Decider) explain(doc *inputDoc, out policy.Output) *Explanation {
	return &Explanation{Denials: explained(out.Deny, out.Origins), Warnings: explained(out.Warn, out.Origins), Limits: d.limitChecks(doc),
		Budgets: budgetChecksOf(doc)}
}

// limitChecks compares the namespace's usage with the pod's demand added to
// each limit of doc that applies to the pod (those of the quotas without
// scopes, and of the scoped quotas it is in, against their pods' usage),
// family by family in the configuration's order, then each team quota's
// (against the team's usage, or its user's).
func (d *Decider) limitChecks(doc *inputDoc) []LimitCheck {
	eff := doc.demand.Effective()
	checks := []LimitCheck{}
	in := map[string]bool{}
	for _, q := range doc.scoped {
		in[q.Name] = true
	}
	for _, u := range ledger.LimitUses(doc.ns, d.families) {
		if len(u.Scopes) > 0 && !in[u.Quota] {
			continue // a scoped quota the pod is not in
		}
		pod := eff.Of(u.Family).Get(u.Dimension)
		after := effective.SatAdd(u.Charged(), pod)
		checks = append(checks, LimitCheck{Family: u.Family, Resource: u.Resource, Used: u.Used, Reserved: u.Reserved, Pod: pod, After: after,
			Limit: u.Limit, Quota: u.Quota, Key: u.Key, Exceeded: pod > 0 && after > u.Limit, Scopes: u.Scopes})
	}
	return append(checks, d.teamLimitChecks(doc)...)
}

func explained(msgs []string, origins map[string][]policy.Origin) []Explained {
	out := make([]Explained, len(msgs))
	for i, m := range msgs {
		out[i] = Explained{Message: m, Rules: origins[m]}
		if out[i].Rules == nil {
			out[i].Rules = []policy.Origin{}
		}
	}
	return out
}
