package decision

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/policy"
)

// guardKeys are input.guard's lists (docs/policy-input.md): candidates,
// computed here from the numbers the input carries, whose only role is to
// let OPA's rule index skip a built-in rule that cannot fire. Each list
// may name more than can fire (the rule re-checks its own condition and
// words its own message) and never less: an empty list is a promise that
// the rule it guards finds nothing (guards_test.go compares the guarded
// rules with the same rules without guards).
var guardKeys = [...]string{"overLimit", "nearLimit", "unfit", "unresolvedFamilies"}

// guardTerm is input.guard with the lists reads names, and quiet (true
// when no built-in rule can fire: every list they start from is empty,
// among items, the input's other parts, and the guard's own lists); the
// shared one with every list empty (the common case) when none names a
// candidate (the lists no rule reads are empty there too). Untrusted
// (policy.Reads.GuardsTrusted: a module other than the built-in ones as
// embedded reads the guard or can change what a built-in rule computes,
// so the lists are not proved against what runs), every list names "*"
// and quiet is false, so that the index skips no rule.
func (d *inputDoc) guardTerm(b *builder, reads *policy.Reads, trusted bool, items [][2]*ast.Term) *ast.Term {
	var lists [len(guardKeys)][]*ast.Term
	some := false
	for i, k := range guardKeys {
		if !reads.Has(k) {
			continue
		}
		if trusted {
			lists[i] = d.guard(b, k)
		} else {
			lists[i] = []*ast.Term{b.str("*")}
		}
		some = some || len(lists[i]) > 0
	}
	quiet := trusted && !some && startsEmpty(b, items)
	if !some && b.words.noGuard[quiet] != nil {
		return b.words.noGuard[quiet]
	}
	items = make([][2]*ast.Term, 0, len(guardKeys)+1)
	if reads.Has("quiet") {
		items = append(items, b.item("quiet", ast.InternedTerm(quiet)))
	}
	for i, k := range guardKeys {
		if reads.Has(k) {
			items = append(items, b.item(k, b.array(lists[i]...)))
		}
	}
	return b.object(items...)
}

// starts are the lists other than the guard's own that built-in deny and
// warn rules start from (the R[0] after input.guard.quiet == false;
// TestEveryBuiltinRuleStartsQuiet reads them in the embedded files).
var starts = [...][]string{{"demand", "errors"}, {"demand", "unresolved"}, {"namespaceUsage", "scopedLimits"},
	{"namespaceUsage", "nativeRequestQuotas"}, {"teamLimits"}, {"budgets"}, {"budgetProblems"}}

// startsEmpty reports whether every list of starts is absent or empty
// among items (the input's parts): R[0] is undefined for each.
func startsEmpty(b *builder, items [][2]*ast.Term) bool {
	for _, path := range starts {
		v := find(items, path[0])
		for _, k := range path[1:] {
			if v == nil {
				break
			}
			v = v.Get(b.str(k))
		}
		if v != nil && v.Get(ast.InternedTerm(0)) != nil {
			return false
		}
	}
	return true
}

// find is the value of key among items (nil: absent).
func find(items [][2]*ast.Term, key string) *ast.Term {
	for _, it := range items {
		if s, ok := it[0].Value.(ast.String); ok && string(s) == key {
			return it[1]
		}
	}
	return nil
}

// guard is the list key of input.guard.
func (d *inputDoc) guard(b *builder, key string) []*ast.Term {
	switch key {
	case "overLimit":
		return d.limitCandidates(b, func(after int64, l int64) bool { return after > l })
	case "nearLimit":
		if d.nearLimit <= 0 {
			return nil
		}
		return d.limitCandidates(b, func(after int64, l int64) bool { return after <= l && effective.Percent(after, l) >= d.nearLimit })
	case "unfit":
		return d.unfit(b)
	default:
		var fams []*ast.Term
		for _, dm := range d.demand {
			if len(dm.Unresolved) > 0 {
				fams = append(fams, b.str(dm.Family))
			}
		}
		return fams
	}
}

// limitCandidates are the families the pod asks for in some dimension
// whose namespace limit passes test(after, value): limits.rego's deny
// (after > value) and near-limit warning (afterPercent >= near, within the
// limit).
func (d *inputDoc) limitCandidates(b *builder, test func(after, value int64) bool) []*ast.Term {
	if len(d.ns.Limits) == 0 {
		return nil
	}
	after, eff := d.after(), d.effUsage()
	var fams []*ast.Term
	for f, l := range d.ns.Limits {
		a, e := after.Of(f), eff.Of(f)
		for _, dim := range effective.Dimensions() {
			if lim := l.Of(dim); lim != nil && e.Get(dim) > 0 && test(a.Get(dim), lim.Value) {
				fams = append(fams, b.str(f))
				break
			}
		}
	}
	return fams
}

// unfit names the first family when capacity.rego's unsatisfiable set may
// be non-empty: some GPU node is known and no eligible node holds the
// largest per-device demand on its smallest devices (all_fit fails).
func (d *inputDoc) unfit(b *builder) []*ast.Term {
	v := d.view
	if v == nil || (v.gpuNodes == 0 && len(v.shapes) == 0) {
		return nil
	}
	var m effective.Vector
	if dm := d.demand.Of(d.primary); dm != nil {
		for _, c := range dm.Containers {
			if c.Managed {
				m = m.Max(effective.Vector{GPU: c.Count, MemMiB: c.MemPerDeviceMiB, Cores: c.CoresPerDevice})
			}
		}
	}
	for _, s := range v.shapes {
		if fitsSmallest(s, m) {
			return nil
		}
	}
	return []*ast.Term{b.str(d.primary)}
}

// fitsSmallest: s has m.GPU devices and its smallest one holds m's memory
// and cores (all_fit's test of one shape).
func fitsSmallest(s *shape, m effective.Vector) bool {
	if int64(len(s.devices)) < m.GPU {
		return false
	}
	if len(s.devices) == 0 { // no smallest device: the input says 0 MiB, 0 cores
		return m.MemMiB <= 0 && m.Cores <= 0
	}
	for _, dev := range s.devices {
		if dev.memMiB < m.MemMiB || dev.cores < m.Cores {
			return false
		}
	}
	return true
}
