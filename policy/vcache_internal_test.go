package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// TestSmallCacheIsTopdowns runs random pushes, pops, puts (values and
// undefined, through one reused buffer, as topdown passes its keys) and
// gets against smallCache and topdown's own cache, before and after it
// moves past smallCacheEntries: every Get and Keys answers the same.
func TestSmallCacheIsTopdowns(t *testing.T) {
	refs := make([]ast.Ref, 40)
	for i := range refs {
		refs[i] = ast.MustParseRef(fmt.Sprintf("data.p%d.r%d", i%5, i))
	}
	// Function keys whose arguments are equal numbers that topdown's cache
	// files apart (out of a float's range, a number hashes by its text) or
	// together (1 and 1.0), first in the pool so that every run has them.
	f := ast.MustParseRef("data.p.f")
	for _, n := range []string{"1e400", "10e399", "1", "1.0"} {
		refs = append([]ast.Ref{f.Append(ast.NumberTerm(json.Number(n)))}, refs...)
	}
	refs = append([]ast.Ref{f.Append(ast.ArrayTerm(ast.NumberTerm("1e400"))), f.Append(ast.ArrayTerm(ast.NumberTerm("10e399")))}, refs...)
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		small, want := &smallCache{}, topdown.NewVirtualCache()
		pool := refs[:4+r.IntN(len(refs)-4)]
		frames := 0
		var buf ast.Ref
		for step := range 200 {
			switch op := r.IntN(10); {
			case op == 0:
				small.Push()
				want.Push()
				frames++
			case op == 1 && frames > 0:
				small.Pop()
				want.Pop()
				frames--
			case op < 6:
				buf = append(buf[:0], pool[r.IntN(len(pool))]...)
				var v *ast.Term
				if r.IntN(4) > 0 {
					v = ast.IntNumberTerm(r.IntN(1000))
				}
				small.Put(buf, v)
				want.Put(buf, v)
				buf[len(buf)-1] = ast.StringTerm("overwritten")
			default:
				ref := pool[r.IntN(len(pool))]
				gv, gu := small.Get(ref)
				wv, wu := want.Get(ref)
				if gu != wu || !gv.Equal(wv) && (gv != nil || wv != nil) {
					t.Fatalf("seed %d step %d: Get(%v) = %v, %v; topdown's %v, %v", seed, step, ref, gv, gu, wv, wu)
				}
			}
			if !sameKeys(small.Keys(), want.Keys()) {
				t.Fatalf("seed %d step %d: Keys %v, topdown's %v", seed, step, small.Keys(), want.Keys())
			}
		}
	}
}

func sameKeys(a, b []ast.Ref) bool {
	str := func(rs []ast.Ref) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.String()
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(str(a), str(b))
}

// BenchmarkSmallCache is the two entries of an evaluation that fits
// (deny, warn), as topdown's cache and as smallCache.
func BenchmarkSmallCache(b *testing.B) {
	deny, warn := ast.MustParseRef("data.gpuadmit.builtin.deny"), ast.MustParseRef("data.gpuadmit.builtin.warn")
	set := ast.SetTerm()
	for _, tc := range []struct {
		name string
		make func() topdown.VirtualCache
	}{{"topdown", topdown.NewVirtualCache}, {"small", func() topdown.VirtualCache { return &smallCache{} }}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := tc.make()
				for _, ref := range []ast.Ref{deny, warn} {
					if v, _ := c.Get(ref); v == nil {
						c.Put(ref, set)
					}
				}
			}
		})
	}
}
