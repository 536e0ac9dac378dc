package peer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// runningPod is a bound, running pod with one app container taking one
// GPU and memMiB of its memory: both engines count it.
func runningPod(ns, name string, memMiB int64) *corev1.Pod {
	return testpod.New(name).NS(ns).UID(fmt.Sprintf("uid-%s-%s", ns, name)).
		App("c", testpod.GPU(1), testpod.Mem(memMiB)).Node("node-1").AppRunning("c").Build()
}

// newPod is the pod under review: the same shape, not yet scheduled.
func newPod(ns, name string, memMiB int64) *corev1.Pod {
	return testpod.New(name).NS(ns).UID(fmt.Sprintf("uid-%s-%s", ns, name)).
		App("c", testpod.GPU(1), testpod.Mem(memMiB)).Build()
}

// peers holds both engines over the same pods.
type peers struct {
	gk *gatekeeper
	ga *gpuadmit
}

func newPeers(ctx context.Context) (*peers, error) {
	gk, err := newGatekeeper(ctx, 0)
	if err != nil {
		return nil, err
	}
	ga, err := newGpuadmit(ctx)
	if err != nil {
		return nil, err
	}
	return &peers{gk: gk, ga: ga}, nil
}

// namespace fills ns with running pods of the given memory (pod-0, pod-1,
// ...) in both engines and sets its limit: gpuadmit's quota in ns,
// Gatekeeper's single constraint (so the limit holds for every namespace
// until the next call).
func (p *peers) namespace(ctx context.Context, ns string, limitMiB int64, mems []int64) error {
	p.ga.setLimit(ns, limitMiB)
	if err := p.gk.setLimit(ctx, limitMiB); err != nil {
		return err
	}
	for i, m := range mems {
		pod := runningPod(ns, fmt.Sprintf("pod-%d", i), m)
		p.ga.sync(pod)
		if err := p.gk.sync(ctx, pod); err != nil {
			return err
		}
	}
	return nil
}

// usedMiB is the ledger's usage of ns, to check that it counted the pods.
func (p *peers) usedMiB(ns string) int64 {
	return p.ga.ledger.Namespace(ns, nil).Used.Of("nvidia").MemMiB
}
