package view

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
)

// selectedBy are the namespaces of the state the GPUClusterBudget name
// selects (by name, or by labels when the state has the namespace),
// sorted; never nil.
func (v View) selectedBy(name string) []string {
	i := slices.IndexFunc(v.budgets.Cluster, func(b *gpuadmitv1.GPUClusterBudget) bool { return b.Name == name })
	if i < 0 {
		return []string{}
	}
	b, l := v.budgets.Cluster[i], v.Ledger
	var sel labels.Selector
	if b.Spec.NamespaceSelector != nil {
		if s, err := metav1.LabelSelectorAsSelector(b.Spec.NamespaceSelector); err == nil {
			sel = s
		}
	}
	out := []string{}
	seen := map[string]bool{}
	for _, n := range b.Spec.Namespaces {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if sel != nil && l != nil {
		for name, ns := range l.Snapshot(nil).Namespaces {
			if !seen[name] && ns.LabelsKnown && sel.Matches(labels.Set(ns.Labels)) {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// WhatIfBudgets tracks the budgets again with edit applied to a copy of
// the state's (top --what-if: a changed limit or window). The copy keeps
// each budget's status: a checkpoint's folded burn counts where its
// window is the new window's (a calendar window starting at the same
// moment; a rolling window's buckets within it), as the webhook would
// count it after the same change.
func (v *View) WhatIfBudgets(edit func(*clusterstate.Budgets) error) error {
	cp := &clusterstate.Budgets{}
	if v.budgets != nil {
		for _, b := range v.budgets.Namespaced {
			cp.Namespaced = append(cp.Namespaced, b.DeepCopy())
		}
		for _, b := range v.budgets.Cluster {
			cp.Cluster = append(cp.Cluster, b.DeepCopy())
		}
	}
	if err := edit(cp); err != nil {
		return err
	}
	v.budgets = cp
	v.tracker = source.BudgetTracker(v.src, cp, v.Ch, v.budgetCfg, v.clock)
	return nil
}
