package decision

import (
	"maps"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// memoSize bounds each of a memo's tables: when one holds this many terms
// it starts again, so requests with ever-new values cannot grow it.
const memoSize = 4096

// memoStringMax is the longest string a memo keeps in a key: a DNS label
// (the longest container name the API server accepts). A longer one, from
// a review the API server would reject, is built per document instead.
const memoStringMax = 63

// memo keeps the input terms that repeat across documents, made once and
// shared read-only (OPA never changes an input's terms, as with the
// words): the containers of a Deployment's pods, the pods' demand vectors
// and the namespace's usage vectors (by value: a namespace's usage repeats
// until its next admission or pod event), each family's limits with the
// share of each used after the pod, the objects made of such terms, and
// each namespace's labels. A term depends only on its key's values.
type memo struct {
	containers table[effective.Container]
	vectors    table[effective.Vector]
	limits     table[limitKey]
	limitSets  table[limitsKey]
	// objects and arrays are the objects and arrays of the document made
	// of terms the memo holds (or the words), by those terms' identity:
	// a family's demand or usage, the containers of a pod.
	objects table[termsKey]
	arrays  table[termsKey]
	labels  labelTable
}

// termsMax is the most terms (an object's keys and values, an array's
// elements) a termsKey holds.
const termsMax = 16

// termsKey is an object's or an array's terms by identity: a term the memo
// or the words hold is the same pointer whenever its value repeats (any
// other term is never equal to another document's, so it only misses).
type termsKey struct {
	n     int
	terms [termsMax]*ast.Term
}

// shared is the object of items: the memo's when the builder has one and
// the object is small enough for a key.
func (b *builder) shared(items ...[2]*ast.Term) *ast.Term {
	if b.memo == nil || 2*len(items) > termsMax || len(items) == 0 {
		return b.object(items...)
	}
	k := termsKey{n: len(items)}
	for i, it := range items {
		k.terms[2*i], k.terms[2*i+1] = it[0], it[1]
	}
	return b.memo.objects.get(k, func(mb *builder) *ast.Term { return mb.object(items...) })
}

// sharedArray is the array of elems: the memo's when the builder has one
// and the array is small enough for a key.
func (b *builder) sharedArray(elems ...*ast.Term) *ast.Term {
	if b.memo == nil || len(elems) > termsMax || len(elems) == 0 {
		return b.array(elems...)
	}
	k := termsKey{n: len(elems)}
	copy(k.terms[:], elems)
	return b.memo.arrays.get(k, func(mb *builder) *ast.Term { return mb.array(elems...) })
}

// limitsKey is one family's limits (by dimension, set when limited) with
// their afterPercent.
type limitsKey struct {
	set    [3]bool
	limits [3]limitKey
}

// limitKey is one limit in input.namespaceUsage with its afterPercent.
type limitKey struct {
	limit        ledger.Limit
	afterPercent int64
}

func newMemo(w words) *memo {
	return &memo{containers: newTable[effective.Container](w), vectors: newTable[effective.Vector](w),
		limits: newTable[limitKey](w), limitSets: newTable[limitsKey](w),
		objects: newTable[termsKey](w), arrays: newTable[termsKey](w), labels: labelTable{table: newTable[string](w), maps: map[string]map[string]string{}}}
}

// table is one bounded memo table.
type table[K comparable] struct {
	mu    sync.RWMutex
	terms map[K]*ast.Term
	// b makes the table's own terms; its slabs live as long as the map,
	// and are dropped with it when the table starts again.
	b builder
}

func newTable[K comparable](w words) table[K] {
	return table[K]{terms: map[K]*ast.Term{}, b: builder{words: w}}
}

// get is k's term, made by mk with the table's builder the first time.
func (t *table[K]) get(k K, mk func(*builder) *ast.Term) *ast.Term {
	t.mu.RLock()
	term, ok := t.terms[k]
	t.mu.RUnlock()
	if ok {
		return term
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if term, ok := t.terms[k]; ok {
		return term
	}
	if len(t.terms) >= memoSize {
		t.terms, t.b = make(map[K]*ast.Term, memoSize), builder{words: t.b.words}
	}
	term = mk(&t.b)
	t.terms[k] = term
	return term
}

// labelTable keeps each namespace's labels' term with the labels it was
// made from: a term serves while the namespace's labels are equal to them.
type labelTable struct {
	table[string]
	maps map[string]map[string]string
}

// get is the term of namespace ns's labels.
func (t *labelTable) get(ns string, labels map[string]string) *ast.Term {
	t.mu.RLock()
	term, ok := t.terms[ns]
	same := ok && maps.Equal(t.maps[ns], labels)
	t.mu.RUnlock()
	if same {
		return term
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.terms) >= memoSize {
		t.terms, t.b, t.maps = make(map[string]*ast.Term, memoSize), builder{words: t.b.words}, map[string]map[string]string{}
	}
	term = t.b.labelMap(labels)
	t.terms[ns], t.maps[ns] = term, maps.Clone(labels)
	return term
}

// container is c's term in input.demand.containers: the memo's when the
// builder has one and c's name is one it keeps.
func (b *builder) container(c *effective.Container) *ast.Term {
	if b.memo == nil || len(c.Name) > memoStringMax {
		return b.containerTerm(c)
	}
	return b.memo.containers.get(*c, func(mb *builder) *ast.Term { return mb.containerTerm(c) })
}

// containerTerm makes c's term.
func (b *builder) containerTerm(c *effective.Container) *ast.Term {
	return b.object(
		b.item("name", b.str(c.Name)), b.item("role", b.str(string(c.Role))), b.item("gpu", b.num(c.Count)),
		b.item("gpumemPerDevice", b.num(c.MemPerDeviceMiB)), b.item("gpumemPercent", b.num(c.MemPercent)),
		b.item("gpucoresPerDevice", b.num(c.CoresPerDevice)), b.item("unresolved", ast.InternedTerm(c.Unresolved)),
		b.item("total", b.vector(c.Total)))
}

// podVector is the term of a vector of the pod's demand: the memo's when
// the builder has one.
func (b *builder) podVector(v effective.Vector) *ast.Term {
	if b.memo == nil {
		return b.vector(v)
	}
	return b.memo.vectors.get(v, func(mb *builder) *ast.Term { return mb.vector(v) })
}

// limit is one limit's term in input.namespaceUsage: the memo's when the
// builder has one and the limit's names are ones it keeps.
func (b *builder) limit(l *ledger.Limit, afterPercent int64) *ast.Term {
	if b.memo == nil || len(l.Quota) > memoStringMax || len(l.Key) > 2*memoStringMax {
		return b.limitTerm(l, afterPercent)
	}
	return b.memo.limits.get(limitKey{*l, afterPercent}, func(mb *builder) *ast.Term { return mb.limitTerm(l, afterPercent) })
}

// limitTerm makes one limit's term.
func (b *builder) limitTerm(l *ledger.Limit, afterPercent int64) *ast.Term {
	return b.object(b.item("value", b.num(l.Value)), b.item("quota", b.str(l.Quota)),
		b.item("key", b.str(l.Key)), b.item("invalid", ast.InternedTerm(l.Invalid)),
		b.item("afterPercent", b.num(afterPercent)))
}

// nsLabels is the term of namespace ns's labels: the memo's when the
// builder has one.
func (b *builder) nsLabels(ns string, labels map[string]string) *ast.Term {
	if b.memo == nil || len(ns) > memoStringMax {
		return b.labelMap(labels)
	}
	return b.memo.labels.get(ns, labels)
}
