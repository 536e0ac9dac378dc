package feed

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

const (
	nvidia  = "nvidia"
	hamiDRA = "hami-core-gpu.project-hami.io"
)

var (
	gpu = testpod.GPU
	mem = testpod.Mem
)

// newLedger is the accounting the feed's tests feed: nvidia alone.
func newLedger(t testing.TB) *ledger.Ledger {
	opts := ledger.Options{Families: []effective.Family{effective.Nvidia()}}
	if tt, ok := t.(*testing.T); ok {
		opts.Log = testr.New(tt)
	}
	return ledger.New(opts)
}

// nvOnly returns the nvidia vector of u and fails t when u holds another
// family or a zero vector.
func nvOnly(t testing.TB, u effective.Usage) effective.Vector {
	t.Helper()
	for f, v := range u {
		if f != nvidia || v.IsZero() {
			t.Errorf("usage %v holds family %q (zero: %v); want nvidia only", u, f, v.IsZero())
		}
	}
	return u.Of(nvidia)
}

// eventually waits, polling, until cond holds or ctx ends.
func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for: %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// newClaimLedger is newLedger governing HAMi-DRA's claims.
func newClaimLedger(t testing.TB) *ledger.Ledger {
	t.Helper()
	fams := []effective.Family{effective.Nvidia()}
	ch, err := dra.NewCharger([]dra.Class{{Name: hamiDRA, Family: nvidia, Mode: dra.ModeCapacity, Driver: hamiDRA,
		MemoryCapacity: "memory", CoresCapacity: "cores"}}, fams)
	if err != nil {
		t.Fatal(err)
	}
	return ledger.New(ledger.Options{Families: fams, Claims: ch})
}
