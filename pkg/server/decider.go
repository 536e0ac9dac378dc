package server

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
	"github.com/gpuadmit/gpuadmit/pkg/cache"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/policy"
)

// decider adapts the shared decision function to the admission handlers'
// interfaces (Decider for validation, Demander for mutation).
type decider struct {
	d        *decision.Decider
	settings effective.Settings
	ledger   *cache.Ledger
}

func newDecider(engine *policy.Engine, settings effective.Settings, ledger *cache.Ledger, log logr.Logger) (*decider, error) {
	d, err := decision.New(engine, settings, ledger, decision.Options{Log: log})
	if err != nil {
		return nil, fmt.Errorf("decision: %w", err)
	}
	return &decider{d: d, settings: settings, ledger: ledger}, nil
}

// Decide implements admission.Decider.
func (a *decider) Decide(ctx context.Context, pod *corev1.Pod, operation string, dryRun bool) (admission.Verdict, error) {
	r, err := a.d.Decide(ctx, decision.Request{Pod: pod, Namespace: pod.Namespace, Operation: operation, DryRun: dryRun})
	if err != nil {
		return admission.Verdict{}, fmt.Errorf("decision: %w", err)
	}
	return admission.Verdict{Allowed: r.Allowed, Effective: r.Effective, Denials: r.Denials, Warnings: r.Warnings}, nil
}

// Demand implements admission.Demander: the effective demand, with memory
// percentages resolved against the largest device among the nodes the
// pod's nodeSelector admits (as the decision resolves them).
func (a *decider) Demand(pod *corev1.Pod) (*effective.Demand, error) {
	d, err := effective.Compute(pod, a.settings, effective.Options{})
	if err != nil || len(d.Unresolved) == 0 {
		return d, err
	}
	mem := a.ledger.Capacity().MaxDeviceMemMiB(func(labels map[string]string) bool {
		for k, v := range pod.Spec.NodeSelector {
			if labels[k] != v {
				return false
			}
		}
		return true
	})
	if mem == 0 {
		return d, nil
	}
	return effective.Compute(pod, a.settings, effective.Options{DeviceMemoryMiB: mem})
}
