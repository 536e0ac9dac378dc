package decision

import (
	"context"
	"slices"

	"github.com/gpuadmit/gpuadmit/pkg/effective"

	"github.com/gpuadmit/gpuadmit/policy"
)

// evaluate runs the policies on doc (traced when the request asks for an
// explanation), built for what the policy set reads.
func (d *Decider) evaluate(ctx context.Context, doc *inputDoc) (Result, error) {
	ev, reads, err := d.prepare()
	if err != nil {
		return Result{}, err
	}
	eval := ev.Eval
	if doc.req.Explain {
		if ex, ok := ev.(Explainer); ok {
			eval = ex.Explain
		}
	}
	out, err := eval(ctx, doc.value(reads))
	if err != nil {
		return Result{}, err
	}
	res := Result{Allowed: len(out.Deny) == 0, Denials: out.Deny, Warnings: out.Warn, Invalid: doc.invalid != nil}
	if res.FitsWithoutUnconfirmed, err = fitsWithoutUnconfirmed(ctx, ev, reads, doc, res.Allowed); err != nil {
		return Result{}, err
	}
	if !res.Allowed {
		res.Exceeded = slices.DeleteFunc(d.limitChecks(doc), func(c LimitCheck) bool { return !c.Exceeded })
		res.OverBudget = overBudget(doc)
	}
	if doc.req.Explain {
		res.Explanation = d.explain(doc, out)
	}
	res.Effective = doc.eff // value computed it
	res.Reserve = doc.reserveUsage()
	return res, nil
}

// reserveUsage is the effective usage the admission reserves: the
// demand's own when the pod names no claim template (the same demands).
func (d *inputDoc) reserveUsage() effective.Usage {
	if len(d.reserve) > 0 && len(d.reserve) == len(d.demand) && &d.reserve[0] == &d.demand[0] {
		return d.effUsage()
	}
	return d.reserve.Effective()
}

// Preparer hands out the active policy set with what its rules read of the
// input; *policy.Engine satisfies it. When the Decider's evaluator has it,
// each decision builds only what that set reads, and evaluates with it.
type Preparer interface {
	Prepare() (*policy.Prepared, error)
}

// prepare returns the evaluator of one decision and what it reads (all of
// the input for an evaluator that cannot tell).
func (d *Decider) prepare() (Evaluator, *policy.Reads, error) {
	p, ok := d.policy.(Preparer)
	if !ok {
		return d.policy, policy.AllReads(), nil
	}
	set, err := p.Prepare()
	if err != nil {
		return nil, nil, err
	}
	return set, set.Reads(), nil
}

// fitsWithoutUnconfirmed evaluates a denied pod again without the
// namespace's and its teams' unconfirmed reservations (admissions whose pod no replica has
// seen yet: a create that failed after admission, or a review that did not
// come from the API server), and reports whether it would then be allowed.
func fitsWithoutUnconfirmed(ctx context.Context, ev Evaluator, reads *policy.Reads, doc *inputDoc, allowed bool) (bool, error) {
	if allowed || (doc.ns.Unconfirmed.IsZero() && !teamsUnconfirmed(doc.teams)) || doc.demand == nil || doc.invalid != nil {
		return false, nil
	}
	again := *doc
	again.ns.Reserved = nonNegative(doc.ns.Reserved.Sub(doc.ns.Unconfirmed))
	again.teams = withoutUnconfirmed(doc.teams)
	out, err := ev.Eval(ctx, again.value(reads))
	if err != nil {
		return false, err
	}
	return len(out.Deny) == 0, nil
}
