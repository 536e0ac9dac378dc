package clusterstate

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// GPUBudgets is the resource of the GPUBudget objects.
func GPUBudgets() schema.GroupVersionResource {
	return gpuadmitv1.GroupVersion().WithResource(gpuadmitv1.BudgetResource)
}

// GPUClusterBudgets is the resource of the GPUClusterBudget objects.
func GPUClusterBudgets() schema.GroupVersionResource {
	return gpuadmitv1.GroupVersion().WithResource(gpuadmitv1.ClusterBudgetResource)
}

// Budgets are the GPU-hour budgets of a dump or a cluster, spec and status
// (the checkpoint the accrual resumes from) as written: the command line
// counts with them as a replica that has just taken over would.
type Budgets struct {
	Namespaced []*gpuadmitv1.GPUBudget
	Cluster    []*gpuadmitv1.GPUClusterBudget
}

// Empty reports whether b holds no budget (nil included).
func (b *Budgets) Empty() bool { return b == nil || len(b.Namespaced)+len(b.Cluster) == 0 }

// BudgetsIn reads the GPUBudgets and GPUClusterBudgets among a dump's
// other objects; a malformed one is an error naming it.
func BudgetsIn(objs *manifest.Objects) (*Budgets, error) {
	b := &Budgets{}
	for _, o := range objs.Other {
		if o.APIVersion != gpuadmitv1.GroupVersion().String() {
			continue
		}
		switch o.Kind {
		case "GPUBudget":
			gb := &gpuadmitv1.GPUBudget{}
			if err := json.Unmarshal(o.Object, gb); err != nil {
				return nil, fmt.Errorf("%s: GPUBudget %s/%s: %w", o.Source, o.Namespace, o.Name, err)
			}
			b.Namespaced = append(b.Namespaced, gb)
		case "GPUClusterBudget":
			gcb := &gpuadmitv1.GPUClusterBudget{}
			if err := json.Unmarshal(o.Object, gcb); err != nil {
				return nil, fmt.Errorf("%s: GPUClusterBudget %s: %w", o.Source, o.Name, err)
			}
			b.Cluster = append(b.Cluster, gcb)
		}
	}
	return b, nil
}

// ReadBudgets lists the cluster's GPUBudgets (of namespaces, every one
// when nil) and GPUClusterBudgets. A kind whose CRD is not installed has
// none, without an error; the API server's error as it is otherwise
// (Forbidden included: the caller warns).
func ReadBudgets(ctx context.Context, c dynamic.Interface, namespaces []string) (*Budgets, error) {
	b := &Budgets{}
	scopes := namespaces
	if scopes == nil {
		scopes = []string{metav1.NamespaceAll}
	}
	for _, ns := range scopes {
		err := listInto(ctx, c.Resource(GPUBudgets()).Namespace(ns), func(u map[string]any) error {
			gb := &gpuadmitv1.GPUBudget{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, gb); err != nil {
				return fmt.Errorf("GPUBudget: %w", err)
			}
			b.Namespaced = append(b.Namespaced, gb)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing gpubudgets: %w", err)
		}
	}
	err := listInto(ctx, c.Resource(GPUClusterBudgets()), func(u map[string]any) error {
		gcb := &gpuadmitv1.GPUClusterBudget{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, gcb); err != nil {
			return fmt.Errorf("GPUClusterBudget: %w", err)
		}
		b.Cluster = append(b.Cluster, gcb)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing gpuclusterbudgets: %w", err)
	}
	return b, nil
}

// listInto pages through r's list, handing each item to add; a resource
// the API server does not serve lists nothing.
func listInto(ctx context.Context, r dynamic.ResourceInterface, add func(map[string]any) error) error {
	err := pages(ctx, func(opts metav1.ListOptions) (metav1.ListInterface, error) {
		l, err := r.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			if err := add(l.Items[i].Object); err != nil {
				return nil, fmt.Errorf("%s: %w", l.Items[i].GetName(), err)
			}
		}
		return l, nil
	})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return err
}
