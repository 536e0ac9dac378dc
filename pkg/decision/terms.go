package decision

import (
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// words holds the terms every input document repeats (its keys, roles,
// operations, the families' names, the empty array and object), made once
// per Decider and shared, read-only, by every document (as the capacity and
// settings values are: OPA never changes an input's terms).
type words struct {
	strs                    map[string]*ast.Term
	emptyArray, emptyObject *ast.Term
	// noGuard is input.guard with every list empty, by its quiet
	// (guard.go).
	noGuard map[bool]*ast.Term
}

// newWords makes the terms of the input's keys and fixed values and of the
// families' names.
func newWords(fams []effective.Family) words {
	list := []string{InputAPIVersion, InputKind, "CREATE", "UPDATE",
		"apiVersion", "kind", "operation", "dryRun", "namespace", "namespaceLabels", "userInfo", "pod", "claim",
		"demand", "namespaceUsage", "capacity", "settings", "gpu", "gpumem", "gpucores",
		"used", "reserved", "after", "limits", "nativeRequestQuotas", "families",
		"effective", "containers", "unresolved", "maxPerDevice", "errors",
		"name", "role", "gpumemPerDevice", "gpumemPercent", "gpucoresPerDevice", "total",
		"container", "resource", "value", "reason", "quota", "key", "invalid", "afterPercent",
		"username", "groups", "generateName", "uid", "labels", "annotations", "nodeSelector",
		"priorityClassName", "runtimeClassName", "schedulerName", "deviceClassNames", "scopedLimits", "family", "dimension", "scopes",
		"teamLimits", "perUser", "user", "members",
		"budgets", "budgetProblems", "window", "rolling", "windowEnd", "hard", "percent", "hardHours", "usedHours", "leftHours",
		"guard", "quiet", "overLimit", "nearLimit", "unfit", "unresolvedFamilies",
		"activeDeadlineSeconds", "maxBurn", "maxBurnHours", "warnPercent", "problem", KindBudget, KindClusterBudget,
		string(effective.RoleApp), string(effective.RoleInit), string(effective.RoleSidecar), ""}
	w := words{strs: make(map[string]*ast.Term, len(list)+len(fams)), emptyArray: ast.ArrayTerm(), emptyObject: ast.ObjectTerm()}
	for _, s := range list {
		w.strs[s] = ast.StringTerm(s)
	}
	for i := range fams {
		w.strs[fams[i].Name] = ast.StringTerm(fams[i].Name)
	}
	w.noGuard = map[bool]*ast.Term{}
	for _, quiet := range []bool{false, true} {
		items := [][2]*ast.Term{{w.strs["quiet"], ast.InternedTerm(quiet)}}
		for _, k := range guardKeys {
			items = append(items, [2]*ast.Term{w.strs[k], w.emptyArray})
		}
		w.noGuard[quiet] = ast.ObjectTerm(items...)
	}
	return w
}

// slabSize is how many terms a builder allocates at once: a document
// whose repeating parts come from the memo makes about that many (64 left
// 1.4 KB of each decision's garbage unused).
const slabSize = 16

// builder makes one document's terms: the shared words where they serve,
// the others from slabs of terms allocated together (a document's terms
// live and die together, with its evaluation).
type builder struct {
	words words
	// memo, when set, holds the terms that repeat across documents
	// (memo.go); nil builds every term.
	memo *memo
	slab []ast.Term
	// numbers are the last numbers made: a document repeats its sizes
	// (a container's memory in its total, the pod's maximum, ...).
	numbers [8]struct {
		n int64
		t *ast.Term
	}
	next int
}

// term is a new term holding v.
func (b *builder) term(v ast.Value) *ast.Term {
	if len(b.slab) == cap(b.slab) {
		b.slab = make([]ast.Term, 0, slabSize)
	}
	b.slab = append(b.slab, ast.Term{Value: v})
	return &b.slab[len(b.slab)-1]
}

// str is s's term: the shared one when s is one of the words.
func (b *builder) str(s string) *ast.Term {
	if t, ok := b.words.strs[s]; ok {
		return t
	}
	if ast.HasInternedValue(s) {
		return ast.InternedTerm(s)
	}
	return b.term(ast.String(s))
}

// num is n's term (OPA's own for small numbers, one of the last made when
// it is the same number).
func (b *builder) num(n int64) *ast.Term {
	if n >= 0 && ast.HasInternedIntNumberTerm(int(n)) {
		return ast.InternedTerm(int(n))
	}
	for _, m := range b.numbers {
		if m.t != nil && m.n == n {
			return m.t
		}
	}
	t := b.term(ast.Number(strconv.FormatInt(n, 10)))
	b.numbers[b.next].n, b.numbers[b.next].t = n, t
	b.next = (b.next + 1) % len(b.numbers)
	return t
}

func (b *builder) item(key string, value *ast.Term) [2]*ast.Term {
	return [2]*ast.Term{b.str(key), value}
}

func (b *builder) object(items ...[2]*ast.Term) *ast.Term {
	if len(items) == 0 && b.words.emptyObject != nil {
		return b.words.emptyObject
	}
	return b.term(ast.NewObject(items...))
}

func (b *builder) array(elems ...*ast.Term) *ast.Term {
	if len(elems) == 0 && b.words.emptyArray != nil {
		return b.words.emptyArray
	}
	return b.term(ast.NewArray(elems...))
}

// labelMap converts a label-like map; a nil map is an empty object.
func (b *builder) labelMap(m map[string]string) *ast.Term {
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		items = append(items, [2]*ast.Term{b.str(k), b.str(v)})
	}
	return b.object(items...)
}

func (b *builder) vector(v effective.Vector) *ast.Term {
	var items [3][2]*ast.Term
	for i, d := range effective.Dimensions() {
		items[i] = b.item(dimKey(d), b.num(v.Get(d)))
	}
	return b.object(items[:]...)
}

// dimKey is a dimension's key in the input's vectors and limits.
func dimKey(d effective.Dimension) string {
	switch d {
	case effective.DimensionCount:
		return "gpu"
	case effective.DimensionMemory:
		return "gpumem"
	default:
		return "gpucores"
	}
}
