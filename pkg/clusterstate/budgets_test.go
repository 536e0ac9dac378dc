package clusterstate_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

func gb(ns, name string) *gpuadmitv1.GPUBudget {
	return &gpuadmitv1.GPUBudget{TypeMeta: metav1.TypeMeta{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: "GPUBudget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gpuadmitv1.GPUBudgetSpec{Window: gpuadmitv1.BudgetWindow{Calendar: gpuadmitv1.WindowMonthly},
			Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("10")}}}
}

func gcb(name string) *gpuadmitv1.GPUClusterBudget {
	return &gpuadmitv1.GPUClusterBudget{TypeMeta: metav1.TypeMeta{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: "GPUClusterBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gpuadmitv1.GPUClusterBudgetSpec{Namespaces: []string{"a"}, Window: gpuadmitv1.BudgetWindow{Calendar: gpuadmitv1.WindowDaily},
			Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}
}

// TestBudgetsIn: a dump's budgets are read with their spec and status; a
// malformed one is an error naming it, never dropped silently.
func TestBudgetsIn(t *testing.T) {
	objs := &manifest.Objects{}
	add := func(o any, kind, ns, name string) {
		b, err := unstructuredOf(t, o).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		objs.Other = append(objs.Other, &manifest.Workload{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: kind, Namespace: ns, Name: name, Object: b})
	}
	b := gb("a", "hours")
	b.Status.Checkpoint = &gpuadmitv1.BudgetCheckpoint{Folded: []gpuadmitv1.BudgetAmount{{Resource: "nvidia.com/gpu", UnitMilliseconds: 7}}}
	add(b, "GPUBudget", "a", "hours")
	add(gcb("team"), "GPUClusterBudget", "", "team")
	got, err := clusterstate.BudgetsIn(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Namespaced) != 1 || len(got.Cluster) != 1 || got.Namespaced[0].Status.Checkpoint.Folded[0].UnitMilliseconds != 7 {
		t.Fatalf("budgets %+v", got)
	}
	objs.Other = append(objs.Other, &manifest.Workload{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: "GPUBudget", Namespace: "b", Name: "bad",
		Object: []byte(`{"spec":{"hard":{"nvidia.com/gpu":"lots"}}}`), Source: "state.yaml"})
	if _, err := clusterstate.BudgetsIn(objs); err == nil || !strings.Contains(err.Error(), "GPUBudget b/bad") {
		t.Fatalf("a malformed budget: err %v, want it named", err)
	}
}

// TestReadBudgets: the cluster's budgets are listed (a namespace's only
// when scoped); a cluster without the CRDs has none, without an error.
func TestReadBudgets(t *testing.T) {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		clusterstate.GPUBudgets(): "GPUBudgetList", clusterstate.GPUClusterBudgets(): "GPUClusterBudgetList"},
		unstructuredOf(t, gb("a", "hours")), unstructuredOf(t, gb("b", "other")), unstructuredOf(t, gcb("team")))
	got, err := clusterstate.ReadBudgets(context.Background(), c, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Namespaced) != 1 || got.Namespaced[0].Name != "hours" || len(got.Cluster) != 1 {
		t.Fatalf("budgets of namespace a: %+v", got)
	}
	all, err := clusterstate.ReadBudgets(context.Background(), c, nil)
	if err != nil || len(all.Namespaced) != 2 {
		t.Fatalf("every budget: %+v, %v", all, err)
	}
	absent := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		clusterstate.GPUBudgets(): "GPUBudgetList", clusterstate.GPUClusterBudgets(): "GPUClusterBudgetList"})
	absent.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
	})
	none, err := clusterstate.ReadBudgets(context.Background(), absent, nil)
	if err != nil || !none.Empty() {
		t.Fatalf("without the CRDs: %+v, %v", none, err)
	}
}
