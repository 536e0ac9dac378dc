// Package nodeagent_test is the integration suite of the NVML node agent on a
// real kube-apiserver and etcd (controller-runtime's envtest, binaries built
// from source by tests/tools/tools.mk): the agent writes its Node's
// gpuadmit.io/gpu-devices annotation, an unchanged node is not patched again,
// and the manifests' ValidatingAdmissionPolicy confines the agent's
// ServiceAccount to its own Node and to that one annotation.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package nodeagent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
)

// controlPlane is a running kube-apiserver + etcd and an admin client.
type controlPlane struct {
	cfg    *rest.Config
	kube   kubernetes.Interface
	client client.Client
	assets string
}

// startControlPlane starts envtest for one test and stops it at cleanup.
func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	assets := envtestgate.Assets(t)
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{cfg: cfg, kube: kube, client: c, assets: assets}
}

// createNode registers a Node as a kubelet would (no kubelet runs here).
func (cp *controlPlane) createNode(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := cp.kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
}

func (cp *controlPlane) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := cp.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

// applyKustomization builds dir with the kubectl built from source
// (`kubectl kustomize`) and creates every object it renders.
func (cp *controlPlane) applyKustomization(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	var out, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(cp.assets, "kubectl"), "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding kustomize output: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := cp.client.Create(context.Background(), u); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		objs = append(objs, u)
	}
	return objs
}

// impersonate is a config for a ServiceAccount's pod-bound token: the user
// name and groups of the ServiceAccount and, when node is not empty, the
// node-name claim the API server adds to tokens bound to a pod on node.
func (cp *controlPlane) impersonate(namespace, serviceAccount, node string) *rest.Config {
	cfg := rest.CopyConfig(cp.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, serviceAccount),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	}
	return cfg
}
