package decision

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// randomContainer is a container from a small set of values, so that
// draws repeat.
func randomContainer(r *rand.Rand) effective.Container {
	roles := []effective.Role{effective.RoleApp, effective.RoleInit, effective.RoleSidecar}
	n := r.Int64N(3)
	return effective.Container{Name: fmt.Sprint("c", r.IntN(5)), Role: roles[r.IntN(3)], Managed: true, Count: n,
		MemPerDeviceMiB: r.Int64N(3) * 40960, MemPercent: r.Int64N(2) * 50, CoresPerDevice: r.Int64N(2) * 30,
		Unresolved: r.IntN(4) == 0, Total: effective.Vector{GPU: n, MemMiB: n * 1000, Cores: r.Int64N(2) * 100}}
}

// TestMemoTermsEqualFresh: every term a memo hands out equals the term
// built for the same value without it, and a value seen before comes
// back as the same term.
func TestMemoTermsEqualFresh(t *testing.T) {
	w := newWords(nil)
	m, fresh := newMemo(w), &builder{words: w}
	b := &builder{words: w, memo: m}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		c := randomContainer(r)
		lim := ledger.Limit{Value: r.Int64N(4) * 1000, Quota: fmt.Sprint("q", r.IntN(3)), Key: "limits.nvidia.com/gpumem", Invalid: r.IntN(5) == 0}
		pct := r.Int64N(101)
		labels := map[string]string{"team": fmt.Sprint("t", r.IntN(3)), "tier": fmt.Sprint(r.IntN(2))}
		ns := fmt.Sprint("ns-", r.IntN(4))
		pairs := [][2]*ast.Term{
			{b.container(&c), fresh.containerTerm(&c)},
			{b.podVector(c.Total), fresh.vector(c.Total)},
			{b.limit(&lim, pct), fresh.limitTerm(&lim, pct)},
			{b.nsLabels(ns, labels), fresh.labelMap(labels)},
		}
		for i, p := range pairs {
			if !p[0].Equal(p[1]) {
				t.Fatalf("term %d: memo %v, built %v", i, p[0], p[1])
			}
		}
		if b.container(&c) != pairs[0][0] || b.limit(&lim, pct) != pairs[2][0] || b.nsLabels(ns, labels) != pairs[3][0] {
			t.Fatal("a value seen before made a second term")
		}
	}
}

// TestMemoBounded attacks the memo with ever-new values: pods whose
// containers all have new names, limits of new quotas, many namespaces.
// No table grows past memoSize, every term stays right, and names longer
// than a DNS label are never kept.
func TestMemoBounded(t *testing.T) {
	w := newWords(nil)
	m, fresh := newMemo(w), &builder{words: w}
	b := &builder{words: w, memo: m}
	for i := range 3*memoSize + 17 {
		c := effective.Container{Name: fmt.Sprint("x", i), Role: effective.RoleApp, Count: 1, Total: effective.Vector{GPU: 1, MemMiB: int64(i)}}
		lim := ledger.Limit{Value: int64(i), Quota: fmt.Sprint("q", i), Key: "limits.nvidia.com/gpu"}
		if got := b.container(&c); !got.Equal(fresh.containerTerm(&c)) {
			t.Fatalf("container %d: %v", i, got)
		}
		if got := b.podVector(c.Total); !got.Equal(fresh.vector(c.Total)) {
			t.Fatalf("vector %d: %v", i, got)
		}
		if got := b.limit(&lim, int64(i%101)); !got.Equal(fresh.limitTerm(&lim, int64(i%101))) {
			t.Fatalf("limit %d: %v", i, got)
		}
		b.nsLabels(fmt.Sprint("ns-", i), map[string]string{"i": fmt.Sprint(i)})
		if m.containers.len() > memoSize || m.vectors.len() > memoSize || m.limits.len() > memoSize || m.labels.len() > memoSize {
			t.Fatalf("after %d values: %d containers, %d vectors, %d limits, %d label sets held (bound %d)",
				i, m.containers.len(), m.vectors.len(), m.limits.len(), m.labels.len(), memoSize)
		}
	}
	before := m.containers.len()
	long := effective.Container{Name: strings.Repeat("n", 1<<20), Role: effective.RoleApp}
	if got := b.container(&long); !got.Equal(fresh.containerTerm(&long)) || m.containers.len() != before {
		t.Fatalf("a 1 MiB container name: held %d -> %d", before, m.containers.len())
	}
	longLim := ledger.Limit{Value: 1, Quota: strings.Repeat("q", 1<<20), Key: "limits.nvidia.com/gpu"}
	if got := b.limit(&longLim, 1); !got.Equal(fresh.limitTerm(&longLim, 1)) {
		t.Fatal("a limit of a quota with a 1 MiB name")
	}
}

// TestMemoConcurrent: documents built at once share the memo's terms and
// each gets the right one (`go test -race -run Memo ./pkg/decision` checks
// the locking too; make test runs it without the race detector).
func TestMemoConcurrent(t *testing.T) {
	w := newWords(nil)
	m := newMemo(w)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			b, fresh := &builder{words: w, memo: m}, &builder{words: w}
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for range 2000 {
				c := randomContainer(r)
				if got := b.container(&c); !got.Equal(fresh.containerTerm(&c)) {
					errs <- fmt.Sprintf("container %+v: %v", c, got)
					return
				}
				b.nsLabels(fmt.Sprint("ns-", r.IntN(3)), map[string]string{"k": fmt.Sprint(r.IntN(3))})
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestMemoDocumentsEqualUnmemoized: on a ledger whose namespace labels
// and quotas change between pods, every input document a Decider with
// its memo builds equals, value for value, the one built without it: a
// label or limit changed after it was memoized is never served stale.
func TestMemoDocumentsEqualUnmemoized(t *testing.T) {
	withMemo, without := &capturing{Evaluator: loadedEngine(t)}, &capturing{Evaluator: loadedEngine(t)}
	d1, l := twoFamilyDecider(t, withMemo)
	d2, err := newDecider(without, l, config.Default(), twoFamilies(), d1.log)
	if err != nil {
		t.Fatal(err)
	}
	d2.memo = nil
	r := rand.New(rand.NewPCG(5, 8))
	for i := range 300 {
		switch r.IntN(4) {
		case 0:
			l.UpsertNamespace(testns.New("team-a", map[string]string{"kubernetes.io/metadata.name": "team-a", "tier": fmt.Sprint(r.IntN(3))}))
		case 1:
			l.UpsertQuota(testquota.New("team-a", "q", map[string]string{"limits.nvidia.com/gpumem": fmt.Sprint(r.IntN(3) * 8192)}))
		}
		p := testpod.New(fmt.Sprint("p", i)).NS("team-a").
			App(fmt.Sprint("c", r.IntN(3)), testpod.GPU(r.Int64N(2)+1), testpod.Mem(r.Int64N(3)*4096)).
			Init("i", testpod.GPU(1), testpod.MemPct(r.Int64N(2)*50+50)).Build()
		req := Request{Pod: p, Operation: "CREATE", User: UserInfo{Username: "u"}}
		r1, err1 := d1.Decide(context.Background(), req)
		r2, err2 := d2.Decide(context.Background(), req)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if withMemo.last.Compare(without.last) != 0 {
			t.Fatalf("pod %d: the input with the memo\n%v\nwithout\n%v", i, withMemo.last, without.last)
		}
		if fmt.Sprint(r1) != fmt.Sprint(r2) {
			t.Fatalf("pod %d: %+v against %+v", i, r1, r2)
		}
	}
}

// len is how many terms t holds.
func (t *table[K]) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.terms)
}
