package nodeagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/nodeagent"
)

const (
	agentNamespace      = "gpuadmit-system"
	agentServiceAccount = "gpuadmit-nvml-agent"
)

// staticSource is a DeviceSource with fixed devices.
type staticSource []devices.Device

func (s staticSource) Devices(context.Context) ([]devices.Device, error) { return s, nil }

// identity is a client as one user.
type identity struct {
	kube  kubernetes.Interface
	nodes nodeagent.KubeNodes
}

func newIdentity(t *testing.T, cfg *rest.Config) identity {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return identity{kube: kube, nodes: nodeagent.KubeNodes{Client: md}}
}

func (id identity) patch(node, mergePatch string, opts metav1.PatchOptions) error {
	_, err := id.kube.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(mergePatch), opts)
	return err
}

func (id identity) sync(node string) error {
	a := &nodeagent.Agent{NodeName: node, Nodes: id.nodes, Source: staticSource{{UUID: "GPU-1", MemoryMiB: 81920, Cores: 100, Healthy: true}}}
	_, err := a.Sync(context.Background())
	return err
}

// TestAdmissionPolicyConfinesAgent applies manifests/nvml-agent (built with
// kubectl kustomize) and acts as the agent's ServiceAccount with the
// node-name claim of a pod-bound token (impersonation with the same user,
// groups and extra): RBAC and the ValidatingAdmissionPolicy let it write the
// gpuadmit.io/gpu-devices annotation of its own Node and nothing else.
func TestAdmissionPolicyConfinesAgent(t *testing.T) {
	cp := startControlPlane(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNamespace}}
	if _, err := cp.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	objs := cp.applyKustomization(t, "../../manifests/nvml-agent")
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !kinds[k] {
			t.Errorf("kustomization renders no %s", k)
		}
	}
	cp.createNode(t, "node-a", map[string]string{"nvidia.com/gpu.present": "true"})
	cp.createNode(t, "node-b", map[string]string{"nvidia.com/gpu.present": "true"})

	agentA := newIdentity(t, cp.impersonate(agentNamespace, agentServiceAccount, "node-a"))
	unbound := newIdentity(t, cp.impersonate(agentNamespace, agentServiceAccount, ""))
	admin := newIdentity(t, cp.cfg)

	// The policy takes effect once the API server has loaded it (and RBAC
	// once its informers saw the binding): probe with a dry-run patch
	// (authorization and admission run, nothing is stored) until the policy
	// itself refuses it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := agentA.patch("node-b", `{"metadata":{"annotations":{"gpuadmit.io/gpu-devices":"[]"}}}`, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'gpuadmit-nvml-agent-own-node'") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ValidatingAdmissionPolicy not enforced after 30s (last dry-run patch: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	tests := []struct {
		name    string
		do      func() error
		wantErr string // empty: allowed
	}{
		{name: "agent writes its own node", do: func() error { return agentA.sync("node-a") }},
		{name: "agent rewrites its own node", do: func() error {
			return agentA.nodes.PatchNodeAnnotation(ctx, "node-a", devices.NodeDevicesAnnotation, "[]")
		}},
		{name: "agent writes another node", do: func() error { return agentA.sync("node-b") },
			wantErr: "system:serviceaccount:gpuadmit-system:gpuadmit-nvml-agent on node node-a may patch only its own Node, not node-b"},
		{name: "agent changes a label of its own node", do: func() error {
			return agentA.patch("node-a", `{"metadata":{"labels":{"nvidia.com/gpu.present":"false"}}}`, metav1.PatchOptions{})
		}, wantErr: "may change only the annotation gpuadmit.io/gpu-devices of Node node-a (labels, finalizers"},
		{name: "agent adds another annotation to its own node", do: func() error {
			return agentA.patch("node-a", `{"metadata":{"annotations":{"hami.io/node-nvidia-register":"x"}}}`, metav1.PatchOptions{})
		}, wantErr: "may change only the annotation gpuadmit.io/gpu-devices of Node node-a"},
		{name: "agent cordons its own node", do: func() error {
			return agentA.patch("node-a", `{"spec":{"unschedulable":true}}`, metav1.PatchOptions{})
		}, wantErr: "spec are not its to change"},
		{name: "token without node-name claim", do: func() error { return unbound.sync("node-a") },
			wantErr: "may patch Nodes only with a pod-bound ServiceAccount token"},
		{name: "agent deletes its own node (RBAC)", do: func() error {
			return agentA.kube.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{})
		}, wantErr: `cannot delete resource "nodes"`},
		{name: "agent lists nodes (RBAC)", do: func() error {
			_, err := agentA.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}, wantErr: `cannot list resource "nodes"`},
		{name: "other users are not confined", do: func() error {
			return admin.patch("node-b", `{"metadata":{"labels":{"team":"ml"},"annotations":{"gpuadmit.io/gpu-devices":"[]"}}}`, metav1.PatchOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tt.wantErr)
			}
		})
	}

	t.Run("node-a holds what the agent wrote, node-b what the admin wrote", func(t *testing.T) {
		a, b := cp.node(t, "node-a"), cp.node(t, "node-b")
		if got := a.Annotations[devices.NodeDevicesAnnotation]; got != "[]" || a.Labels["nvidia.com/gpu.present"] != "true" || a.Spec.Unschedulable {
			t.Errorf("node-a: annotation %q, labels %v, unschedulable %v", got, a.Labels, a.Spec.Unschedulable)
		}
		if _, ok := a.Annotations["hami.io/node-nvidia-register"]; ok {
			t.Error("node-a got the refused annotation")
		}
		if got := b.Annotations[devices.NodeDevicesAnnotation]; got != "[]" || b.Labels["team"] != "ml" {
			t.Errorf("node-b: annotation %q, labels %v", got, b.Labels)
		}
	})
}
