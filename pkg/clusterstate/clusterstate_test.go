package clusterstate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
)

// forbid makes the fake API server refuse to list resource in every
// namespace (ns "") or in ns.
func forbid(c *fake.Clientset, resource, ns string) {
	c.PrependReactor("list", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != ns {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", nil)
	})
}

// names are the objects' namespace/name, sorted.
func names[T metav1.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		n := o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			n = ns + "/" + n
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func TestRead(t *testing.T) {
	objects := func() []runtime.Object {
		return []runtime.Object{
			testnode.WithGPUs("node1", nil, 24576),
			testns.New("team-a", map[string]string{"gpu-tier": "bronze"}), testns.New("team-b", nil),
			testquota.New("team-a", "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "24576"}),
			testquota.New("team-b", "gpu-quota", map[string]string{"limits.nvidia.com/gpu": "1"}),
			testpod.New("a").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(1024)).Node("node1").Build(),
			testpod.New("b").NS("team-b").App("c", testpod.GPU(1), testpod.Mem(2048)).Node("node1").Build(),
		}
	}
	tests := []struct {
		name       string
		namespaces []string
		forbidden  [][2]string // resource, namespace
		wantNodes  []string
		wantQuotas []string
		wantPods   []string
		// wantNamespaces are the Namespace objects read (those named).
		wantNamespaces []string
		wantWarn       string
		// wantForbidden are the reads refused (what the webhook reads and
		// the state lacks).
		wantForbidden []string
		wantErr       string
	}{
		{name: "every namespace",
			wantNodes: []string{"node1"}, wantQuotas: []string{"team-a/gpu-quota", "team-b/gpu-quota"}, wantPods: []string{"team-a/a", "team-b/b"}},
		{name: "one namespace: its quotas and labels, every namespace's pods",
			namespaces: []string{"team-a"}, wantNamespaces: []string{"team-a"},
			wantNodes: []string{"node1"}, wantQuotas: []string{"team-a/gpu-quota"}, wantPods: []string{"team-a/a", "team-b/b"}},
		{name: "a namespace that does not exist: a warning",
			namespaces: []string{"team-a", "team-c"}, wantNamespaces: []string{"team-a"},
			wantNodes: []string{"node1"}, wantQuotas: []string{"team-a/gpu-quota"}, wantPods: []string{"team-a/a", "team-b/b"},
			wantWarn: `cannot read namespace "team-c" (namespaces "team-c" not found): the policies see no namespace labels`},
		{name: "pods of every namespace forbidden: the namespace's",
			namespaces: []string{"team-a"}, forbidden: [][2]string{{"pods", ""}},
			wantNodes: []string{"node1"}, wantQuotas: []string{"team-a/gpu-quota"}, wantPods: []string{"team-a/a"}, wantNamespaces: []string{"team-a"},
			wantWarn: `reading namespace ["team-a"] only; device usage on nodes counts its pods only`, wantForbidden: []string{"list pods in all namespaces"}},
		{name: "pods of every namespace forbidden, and no namespace named",
			forbidden: [][2]string{{"pods", ""}}, wantErr: "listing pods in all namespaces: pods is forbidden"},
		{name: "pods of the namespace forbidden too",
			namespaces: []string{"team-a"}, forbidden: [][2]string{{"pods", ""}, {"pods", "team-a"}},
			wantErr: "listing pods in namespace team-a: pods is forbidden"},
		{name: "nodes forbidden: none",
			forbidden:  [][2]string{{"nodes", ""}},
			wantQuotas: []string{"team-a/gpu-quota", "team-b/gpu-quota"}, wantPods: []string{"team-a/a", "team-b/b"},
			wantWarn: "cannot list nodes", wantForbidden: []string{"list nodes"}},
		{name: "quotas forbidden: an error",
			namespaces: []string{"team-a"}, forbidden: [][2]string{{"resourcequotas", "team-a"}},
			wantErr: "listing resourcequotas in namespace team-a: resourcequotas is forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset(objects()...)
			for _, f := range tt.forbidden {
				forbid(c, f[0], f[1])
			}
			st, err := clusterstate.ReadWithProgress(context.Background(), c, tt.namespaces, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range []struct {
				what      string
				got, want []string
			}{
				{"nodes", names(st.Objects.Nodes), tt.wantNodes},
				{"quotas", names(st.Objects.Quotas), tt.wantQuotas},
				{"pods", names(st.Objects.Pods), tt.wantPods},
				{"namespaces", names(st.Objects.Namespaces), tt.wantNamespaces},
			} {
				if !slices.Equal(got.got, got.want) && len(got.got)+len(got.want) > 0 {
					t.Errorf("%s %q, want %q", got.what, got.got, got.want)
				}
			}
			if !slices.Equal(st.Forbidden, tt.wantForbidden) {
				t.Errorf("forbidden %q, want %q", st.Forbidden, tt.wantForbidden)
			}
			warnings := strings.Join(st.Warnings, "\n")
			if tt.wantWarn == "" && warnings != "" || !strings.Contains(warnings, tt.wantWarn) {
				t.Errorf("warnings %q, want %q", warnings, tt.wantWarn)
			}
		})
	}
}

// TestReadWithProgress: progress is told the pods listed so far, after
// each page.
func TestReadWithProgress(t *testing.T) {
	c := fake.NewClientset(
		testpod.New("a").NS("team-a").App("c", testpod.GPU(1)).Build(),
		testpod.New("b").NS("team-b").App("c", testpod.GPU(1)).Build(),
	)
	var told []int
	st, err := clusterstate.ReadWithProgress(context.Background(), c, nil, func(pods int) { told = append(told, pods) })
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Objects.Pods) != 2 || !slices.Equal(told, []int{2}) {
		t.Errorf("%d pods, progress told %v; want 2 pods, [2]", len(st.Objects.Pods), told)
	}
}
