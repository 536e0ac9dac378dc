package peer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSameVerdicts gives both engines the same random namespaces (up to 30
// running pods of random GPU memory, a limit near their sum) and reviews a
// random pod in each: the verdicts must agree, and a denial must report
// the same demand and usage on both sides. Every trial uses a namespace of
// its own, so the pods of earlier trials are in other namespaces and must
// not count.
func TestSameVerdicts(t *testing.T) {
	const trials = 300
	ctx := context.Background()
	p, err := newPeers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20261130, 1))
	var allowed, denied int
	for trial := range trials {
		ns := fmt.Sprintf("trial-%d", trial)
		mems := make([]int64, rng.IntN(31))
		var sum int64
		for i := range mems {
			mems[i] = 1 + rng.Int64N(40960)
			sum += mems[i]
		}
		need := 1 + rng.Int64N(40960)
		// A limit at, just below or around the sum, so both verdicts occur
		// and the boundary (exactly full: allowed) is hit.
		var limit int64
		switch rng.IntN(4) {
		case 0:
			limit = sum + need
		case 1:
			limit = sum + need - 1
		default:
			limit = max(0, sum+need+rng.Int64N(2*need+1)-need)
		}
		if err := p.namespace(ctx, ns, limit, mems); err != nil {
			t.Fatal(err)
		}
		if got := p.usedMiB(ns); got != sum {
			t.Fatalf("trial %d: the ledger counts %d MiB in %s, the pods take %d MiB", trial, got, ns, sum)
		}
		pod := newPod(ns, "reviewed", need)
		req, err := admissionRequest(pod)
		if err != nil {
			t.Fatal(err)
		}
		gk, err := p.gk.review(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := p.ga.review(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		wantDenied := sum+need > limit
		if gk.denied != wantDenied || ga.denied != wantDenied {
			t.Fatalf("trial %d (%s: %d pods, %d MiB used, pod needs %d MiB, limit %d MiB, want denied=%v):\n"+
				"Gatekeeper denied=%v %q\ngpuadmit   denied=%v %q",
				trial, ns, len(mems), sum, need, limit, wantDenied, gk.denied, gk.messages, ga.denied, ga.messages)
		}
		if !wantDenied {
			allowed++
			continue
		}
		denied++
		want := fmt.Sprintf("pod needs %d MiB, %d MiB used", need, sum)
		for _, side := range []struct {
			name string
			v    verdict
		}{{"Gatekeeper", gk}, {"gpuadmit", ga}} {
			if len(side.v.messages) != 1 || !strings.Contains(side.v.messages[0], want) {
				t.Fatalf("trial %d: %s's denial %q does not say %q", trial, side.name, side.v.messages, want)
			}
		}
	}
	t.Logf("%d trials: %d allowed, %d denied by both", trials, allowed, denied)
	if allowed == 0 || denied == 0 {
		t.Fatalf("the trials did not exercise both verdicts: %d allowed, %d denied", allowed, denied)
	}
}
