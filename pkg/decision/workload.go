package decision

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// TemplateFit is what a workload check reads of one pod template: the
// demand one of its pods would be checked with (Decide's: memory
// percentages resolved against the nodes it may run on, its known
// ResourceClaimTemplates' claims included), and every limit of the
// namespace such a pod is under (those of the quotas without scopes, and
// of the scoped quotas it matches), with the namespace's usage and
// reservations.
type TemplateFit struct {
	// Demand is one pod's, per family; empty for a template that names no
	// managed resource.
	Demand effective.Usage
	Limits []ledger.LimitUse
}

// TemplateFit computes the fit of a pod made from a workload's template in
// namespace ns, counting pending reservations. An invalid request is an
// *effective.InvalidError, as for Decide.
func (d *Decider) TemplateFit(ctx context.Context, ns string, pod *corev1.Pod, pending []reservation.Reservation) (TemplateFit, error) {
	if !d.requestsOwn(pod) {
		return TemplateFit{}, nil
	}
	view, _, err := d.nodes(pod)
	if err != nil {
		return TemplateFit{}, err
	}
	checked, _, err := d.podDemand(ctx, pod, view)
	if err != nil {
		return TemplateFit{}, fmt.Errorf("the pod template's demand: %w", err)
	}
	snap := d.snap.Namespace(ns, pending)
	in := map[string]bool{}
	for _, q := range scopedOf(&snap, pod) {
		in[q.Name] = true
	}
	var limits []ledger.LimitUse
	for _, u := range ledger.LimitUses(snap, d.families) {
		if len(u.Scopes) > 0 && !in[u.Quota] {
			continue // a scoped quota the pod is not in
		}
		limits = append(limits, u)
	}
	return TemplateFit{Demand: checked.Effective(), Limits: limits}, nil
}
