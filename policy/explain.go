package policy

import (
	"context"
	"slices"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Origin is a rule that produced a message.
type Origin struct {
	// Rule is the rule's full name (data.gpuadmit.builtin.deny).
	Rule string `json:"rule"`
	// File and Line locate the rule: the source's name and the module's
	// path (embedded/limits.rego, team-a-policies/labels.rego), 1-based.
	File string `json:"file"`
	Line int    `json:"line"`
}

// String is "data.gpuadmit.builtin.deny (embedded/limits.rego:23)".
func (o Origin) String() string {
	return o.Rule + " (" + o.File + ":" + strconv.Itoa(o.Line) + ")"
}

// Explain evaluates like Eval and also records, for every message, the
// rules that produced it (Output.Origins): the rule whose body made the
// message first, then each rule that passed it on (capacity.rego's
// unsatisfiable, then its deny), in the order evaluation left them.
// It traces the evaluation, which costs many times an Eval: for the
// command line, never for the webhook.
func (e *Engine) Explain(ctx context.Context, input ast.Value) (Output, error) {
	p, err := e.Prepare()
	if err != nil {
		return Output{}, err
	}
	return p.Explain(ctx, input)
}

// explain evaluates set on input with a trace, and tells each message's rules.
func (e *Engine) explain(ctx context.Context, set *policySet, input ast.Value) (Output, error) {
	tracer := topdown.NewBufferTracer()
	out, err := e.eval(ctx, set, input, tracer)
	if err != nil {
		return out, err
	}
	want := map[string]bool{}
	for _, m := range slices.Concat(out.Deny, out.Warn) {
		want[m] = true
	}
	out.Origins = map[string][]Origin{}
	for _, ev := range *tracer {
		if ev.Op != topdown.ExitOp {
			continue
		}
		rule, ok := ev.Node.(*ast.Rule)
		if !ok || rule.Head.Key == nil || rule.Head.Value != nil || rule.Location == nil {
			continue // not a rule that adds to a set
		}
		msg, ok := keyOf(ev, rule.Head.Key).(ast.String)
		if !ok || !want[string(msg)] {
			continue
		}
		o := Origin{Rule: rule.Module.Package.Path.Extend(rule.Head.Ref().GroundPrefix()).String(), File: rule.Location.File, Line: rule.Location.Row}
		if !slices.Contains(out.Origins[string(msg)], o) {
			out.Origins[string(msg)] = append(out.Origins[string(msg)], o)
		}
	}
	return out, nil
}

// keyOf is the value a rule added to its set: the key itself when it is
// a constant, else the value the event's locals bind it to (the compiler
// rewrites every non-constant key to a variable).
func keyOf(ev *topdown.Event, key *ast.Term) ast.Value {
	if ast.IsConstant(key.Value) {
		return key.Value
	}
	if v, ok := key.Value.(ast.Var); ok && ev.Locals != nil {
		return ev.Locals.Get(v)
	}
	return nil
}
