package dra

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestAddOverflow: a claim whose requests sum past int64 is rejected (no
// claim the API accepts gets there: counts and capacities are bounded).
func TestAddOverflow(t *testing.T) {
	b := &builder{claim: "claim", c: &Charger{fams: []effective.Family{effective.Nvidia()}}, acc: make([]*effective.Demand, 1)}
	huge := &charged{vec: effective.Vector{GPU: 1, MemMiB: math.MaxInt64}}
	b.add(0, "a", huge)
	b.add(0, "b", huge)
	if len(b.errs) != 1 || b.errs[0].Container != "claim/b" || !strings.Contains(b.errs[0].Reason, "64-bit") {
		t.Fatalf("errs = %v, want one overflow of claim/b", b.errs)
	}
	var fe *effective.FieldError
	if !errors.As(&effective.InvalidError{Errors: b.errs}, &fe) {
		t.Error("not a field error")
	}
}

func TestCeil(t *testing.T) {
	for _, tc := range []struct{ b, want int64 }{{0, 0}, {1, 1}, {mib, 1}, {mib + 1, 2}, {math.MaxInt64, 1 << 43}} {
		if got := ceilMiB(tc.b); got != tc.want {
			t.Errorf("ceilMiB(%d) = %d, want %d", tc.b, got, tc.want)
		}
	}
	if ceilDiv(1536, 1024) != 2 || ceilDiv(2048, 1024) != 2 || ceilDiv(0, 3) != 0 {
		t.Error("ceilDiv")
	}
}
