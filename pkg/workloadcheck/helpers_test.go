package workloadcheck_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// scoped is a quota "prio" of gpus nvidia.com/gpu over the pods of
// priority class pc.
func scoped(pc, gpus string) *corev1.ResourceQuota {
	q := testquota.New(ns, "prio", map[string]string{"limits.nvidia.com/gpu": gpus})
	q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
		ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{pc}}}}
	return q
}

func withPriority(p *corev1.Pod, pc string) *corev1.Pod {
	p.Spec.PriorityClassName = pc
	return p
}

func gpus2() *corev1.ResourceQuota {
	return testquota.New(ns, "gpu", map[string]string{"limits.nvidia.com/gpu": "2"})
}

// ownPods are n recorded pods named as a Deployment "train"'s.
func ownPods(n int, memMiB int64) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = used(fmt.Sprintf("train-5d8f9-%d", i), memMiB)
	}
	return out
}

func nvMem(gpus, memMiB int64) effective.Usage {
	return effective.UsageOf(config.Families(config.Default())[0].Name, effective.Vector{GPU: gpus, MemMiB: memMiB})
}
