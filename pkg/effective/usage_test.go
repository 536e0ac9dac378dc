package effective_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// randomUsage draws a usage over three families, some vectors zero.
func randomUsage(r *rand.Rand) effective.Usage {
	u := effective.Usage{}
	for _, f := range []string{"nvidia", "ascend-910B2", "hygon"} {
		if r.IntN(3) == 0 {
			continue
		}
		u[f] = effective.Vector{GPU: r.Int64N(4), MemMiB: r.Int64N(1 << 20), Cores: r.Int64N(400)}
	}
	return u
}

// TestUsageAlgebra: per family, Add, Sub and Max are the vectors' own;
// (a + b) - b == a; max is commutative and bounds both; an empty result
// is nil and never holds a zero vector, whatever produced it.
func TestUsageAlgebra(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		a, b := randomUsage(r), randomUsage(r)
		sum, ok := a.Add(b)
		if !ok {
			t.Fatalf("%v + %v overflowed", a, b)
		}
		for _, f := range []string{"nvidia", "ascend-910B2", "hygon", "other"} {
			want, _ := a.Of(f).Add(b.Of(f))
			if sum.Of(f) != want {
				t.Fatalf("(%v + %v).Of(%s) = %v, want %v", a, b, f, sum.Of(f), want)
			}
			if m := a.Max(b).Of(f); m != a.Of(f).Max(b.Of(f)) {
				t.Fatalf("max of %s = %v", f, m)
			}
		}
		if back := sum.Sub(b); !back.Equal(a) {
			t.Fatalf("(%v + %v) - b = %v", a, b, back)
		}
		if !a.Max(b).Equal(b.Max(a)) {
			t.Fatalf("max not commutative for %v, %v", a, b)
		}
		for _, u := range []effective.Usage{sum, sum.Sub(b), a.Max(b), a.Sub(a)} {
			if len(u) == 0 && u != nil {
				t.Fatalf("empty usage %#v is not nil", u)
			}
			for f, v := range u {
				if v.IsZero() {
					t.Fatalf("usage %v holds a zero vector for %s", u, f)
				}
			}
		}
	}
}

// A usage is a value: no method changes its receiver.
func TestUsageMethodsDoNotModify(t *testing.T) {
	a := effective.Usage{"nvidia": {GPU: 1, MemMiB: 10}}
	b := effective.Usage{"nvidia": {GPU: 1, MemMiB: 10}, "hygon": {GPU: 2}}
	_, _ = a.Add(b)
	_ = a.Sub(b)
	_ = a.Max(b)
	if !a.Equal(effective.Usage{"nvidia": {GPU: 1, MemMiB: 10}}) || len(b) != 2 {
		t.Fatalf("receiver changed: %v, %v", a, b)
	}
}
