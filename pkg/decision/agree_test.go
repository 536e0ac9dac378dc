package decision_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// TestMutateValidateLedgerAgree: on random clusters (nodes with zone and
// model labels and devices of several sizes) and random pods (memory
// percentages, whole cards, zeros, nodeSelector, required node affinity,
// nodeName), the mutating webhook's demand (Demand), the validating
// webhook's decision (Decide) and the ledger's charge of the pod while it
// is pending (or bound) are the same vector: one eligibility rule for all.
func TestMutateValidateLedgerAgree(t *testing.T) {
	e := engine(t)
	r := rand.New(rand.NewPCG(7, 11))
	sizes := []int64{16384, 24576, 40960, 81920, 143771}
	for cluster := range 200 {
		l := newLedger()
		testns.Known(l, "ns")
		nodes := 1 + r.IntN(5)
		for i := range nodes {
			var mems []int64
			for range 1 + r.IntN(3) {
				mems = append(mems, sizes[r.IntN(len(sizes))])
			}
			labels := map[string]string{"zone": fmt.Sprint(r.IntN(3)), "model": fmt.Sprint("m", r.IntN(2))}
			l.UpsertNode(testnode.WithGPUs(fmt.Sprintf("n%d", i), labels, mems...))
		}
		d, err := decision.New(e, l, config.Default(), logr.Discard())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			pod := randomPod(r, fmt.Sprintf("p%d-%d", cluster, i), nodes)
			dem, err := d.Demand(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Decide(context.Background(), decision.Request{Pod: pod})
			if err != nil {
				t.Fatal(err)
			}
			l.UpsertPod(pod)
			charged := l.Namespace("ns", nil).Used
			l.DeletePod(pod)
			if !dem.Effective().Equal(res.Effective) || (len(dem.Unresolved()) == 0 && !charged.Equal(res.Effective)) {
				t.Fatalf("cluster %d pod %s (selector %v, affinity %v, node %q): mutate %v, validate %v, ledger %v",
					cluster, pod.Name, pod.Spec.NodeSelector, pod.Spec.Affinity != nil, pod.Spec.NodeName, dem.Effective(), res.Effective, charged)
			}
		}
	}
}

func randomPod(r *rand.Rand, name string, nodes int) *corev1.Pod {
	b := testpod.New(name).NS("ns")
	opts := [][]testpod.Opt{
		{testpod.GPU(1)}, {testpod.GPU(2), testpod.MemPct(50)}, {testpod.GPU(1), testpod.MemPct(0)},
		{testpod.GPU(1), testpod.Mem(0)}, {testpod.GPU(1), testpod.Mem(4096)}, {testpod.MemPct(100)},
		{testpod.GPU(1), testpod.MemPct(30), testpod.Cores(20)},
	}
	if r.IntN(2) == 0 {
		b.Init("init", opts[r.IntN(len(opts))]...)
	}
	b.App("app", opts[r.IntN(len(opts))]...)
	switch r.IntN(5) {
	case 0:
		b.NodeSelector("zone", fmt.Sprint(r.IntN(3)))
	case 1:
		b.RequireNodeLabelIn("model", "m0")
	case 2:
		b.NodeSelector("zone", fmt.Sprint(r.IntN(3))).RequireNodeLabelIn("model", fmt.Sprint("m", r.IntN(2)))
	case 3:
		b.Node(fmt.Sprintf("n%d", r.IntN(nodes)))
	}
	return b.Build()
}
