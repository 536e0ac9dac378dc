package monitoring_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// query is one PromQL expression and where it is written.
type query struct {
	where string // file and rule, panel or variable
	expr  string
}

var promql = parser.NewParser(parser.Options{})

// parse parses q's expression, naming q and the parser's error on failure.
func (q query) parse() (parser.Expr, error) {
	e, err := promql.ParseExpr(q.expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %q does not parse: %w", q.where, q.expr, err)
	}
	return e, nil
}

// grafanaVariable matches $name, ${name}, ${name:format} and [[name]].
var grafanaVariable = regexp.MustCompile(`\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)`)

// withoutVariables replaces Grafana's variables by values PromQL parses
// where they stand: a duration for the interval variables, "300" for their
// numeric forms, and "x" for the dashboard's own variables (which the
// dashboard uses inside label values only).
func withoutVariables(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		m := grafanaVariable.FindStringSubmatch(v)
		switch m[1] + m[2] + m[3] {
		case "__interval", "__rate_interval", "__range":
			return "5m"
		case "__interval_ms", "__range_ms", "__range_s":
			return "300"
		default:
			return "x"
		}
	})
}

// metricNames lists the metric names e selects: vector selectors' names and
// __name__ equality matchers. A name matched by a regular expression cannot
// be listed, so it is an error.
func metricNames(e parser.Expr) ([]string, error) {
	names := map[string]bool{}
	var err error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names[vs.Name] = true
		}
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Name != model.MetricNameLabel:
			case m.Type.String() == "=":
				names[m.Value] = true
			default:
				err = fmt.Errorf("selector %s matches metric names by %s: list the names instead", vs, m)
			}
		}
		return nil
	})
	return slices.Sorted(maps.Keys(names)), err
}

// keptLabels returns the only labels the series of e's result can have,
// or false when that is not known from the expression alone (a bare
// selector, an aggregation without(...)).
func keptLabels(e parser.Expr) (map[string]bool, bool) {
	switch n := e.(type) {
	case *parser.ParenExpr:
		return keptLabels(n.Expr)
	case *parser.StepInvariantExpr:
		return keptLabels(n.Expr)
	case *parser.UnaryExpr:
		return keptLabels(n.Expr)
	case *parser.SubqueryExpr:
		return keptLabels(n.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return map[string]bool{}, true
	case *parser.AggregateExpr:
		return aggregateLabels(n)
	case *parser.BinaryExpr:
		return binaryLabels(n)
	case *parser.Call:
		return callLabels(n)
	}
	return nil, false
}

func aggregateLabels(n *parser.AggregateExpr) (map[string]bool, bool) {
	switch {
	case n.Op == parser.TOPK || n.Op == parser.BOTTOMK || n.Op == parser.LIMITK || n.Op == parser.LIMIT_RATIO:
		return keptLabels(n.Expr) // selects series, keeps their labels
	case n.Without:
		return nil, false
	}
	out := set(n.Grouping...)
	if s, ok := n.Param.(*parser.StringLiteral); ok && n.Op == parser.COUNT_VALUES {
		out[s.Val] = true
	}
	return out, true
}

func binaryLabels(n *parser.BinaryExpr) (map[string]bool, bool) {
	switch {
	case n.LHS.Type() == parser.ValueTypeScalar:
		return keptLabels(n.RHS)
	case n.RHS.Type() == parser.ValueTypeScalar || n.VectorMatching == nil:
		return keptLabels(n.LHS)
	}
	m := n.VectorMatching
	if n.Op == parser.LOR {
		l, lok := keptLabels(n.LHS)
		r, rok := keptLabels(n.RHS)
		if !lok || !rok {
			return nil, false
		}
		maps.Copy(l, r)
		return l, true
	}
	if n.Op.IsSetOperator() {
		return keptLabels(n.LHS)
	}
	side := n.LHS
	if m.Card == parser.CardOneToMany {
		side = n.RHS
	}
	if m.Card == parser.CardOneToOne && m.On {
		return set(m.MatchingLabels...), true
	}
	out, ok := keptLabels(side)
	if !ok {
		return nil, false
	}
	if m.Card == parser.CardOneToOne {
		for _, l := range m.MatchingLabels { // ignoring(...)
			delete(out, l)
		}
	}
	for _, l := range m.Include {
		out[l] = true
	}
	return out, true
}

func callLabels(n *parser.Call) (map[string]bool, bool) {
	switch n.Func.Name {
	case "histogram_quantile":
		out, ok := keptLabels(n.Args[1])
		delete(out, "le")
		return out, ok
	case "label_replace", "label_join":
		out, ok := keptLabels(n.Args[0])
		if dst, isString := n.Args[1].(*parser.StringLiteral); ok && isString {
			out[dst.Val] = true
		}
		return out, ok
	case "vector", "time", "pi", "scalar":
		return map[string]bool{}, true
	}
	for _, a := range n.Args {
		if t := a.Type(); t == parser.ValueTypeVector || t == parser.ValueTypeMatrix {
			return keptLabels(a)
		}
	}
	return nil, false
}

func set(names ...string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}
