package peer

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
)

// gpuadmit is the Decider with the embedded policies and a ledger without
// nodes (capacity checks do not deny while no GPU node is known).
type gpuadmit struct {
	ledger  *ledger.Ledger
	decider *decision.Decider
}

func newGpuadmit(ctx context.Context) (*gpuadmit, error) {
	e := policy.New(policy.Options{})
	if err := e.Load(ctx); err != nil {
		return nil, fmt.Errorf("loading the policies: %w", err)
	}
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}, Log: logr.Discard()})
	d, err := decision.New(e, l, config.Default(), logr.Discard())
	if err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	return &gpuadmit{ledger: l, decider: d}, nil
}

// setLimit makes ns known and sets its quota's limits.nvidia.com/gpumem.
func (g *gpuadmit) setLimit(ns string, limitMiB int64) {
	g.ledger.UpsertNamespace(testns.New(ns, map[string]string{"kubernetes.io/metadata.name": ns}))
	g.ledger.UpsertQuota(testquota.New(ns, "gpu", map[string]string{"limits.nvidia.com/gpumem": fmt.Sprint(limitMiB)}))
}

func (g *gpuadmit) sync(pod *corev1.Pod) { g.ledger.UpsertPod(pod) }

func (g *gpuadmit) review(ctx context.Context, pod *corev1.Pod) (verdict, error) {
	res, err := g.decider.Decide(ctx, decision.Request{Pod: pod, NoManagedResource: !g.decider.Requests(pod)})
	if err != nil {
		return verdict{}, fmt.Errorf("decision on %q: %w", pod.Name, err)
	}
	return verdict{denied: !res.Allowed, messages: res.Denials}, nil
}
