package chart_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/hack/manifestgen"
)

var update = flag.Bool("update", false, "write manifests/ from the chart (make manifests)")

// TestManifestsFromChart: the kustomize base under manifests/ is what the
// chart renders (hack/manifestgen); with -update (make manifests) it
// writes them.
func TestManifestsFromChart(t *testing.T) {
	files, err := manifestgen.Files(context.Background(), templateHelm(t), chartDir)
	if err != nil {
		t.Fatal(err)
	}
	const dir = "../../manifests"
	if *update {
		changed, err := manifestgen.Write(dir, files)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("manifests/: %d files changed %v", len(changed), changed)
		return
	}
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("manifests/%s is not what the chart renders (run make manifests): %v", p, err)
		}
	}
	generated, err := manifestgen.Generated(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range generated {
		if _, ok := files[p]; !ok {
			t.Errorf("manifests/%s was generated but the chart no longer renders it (run make manifests)", p)
		}
	}
}

// TestKustomizeCertManagerComponent: the kustomize base with its
// cert-manager component gives the objects the chart renders in
// cert-manager mode.
func TestKustomizeCertManagerComponent(t *testing.T) {
	overlay := t.TempDir()
	manifests, err := filepath.Abs("../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(overlay, manifests)
	if err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel + "/webhook\n" +
		"components:\n  - " + rel + "/webhook/cert-manager\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(filepath.Dir(helmBin(t)), "kubectl"), "kustomize", overlay,
		"--load-restrictor", "LoadRestrictionsNone").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	var got []*unstructured.Unstructured
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		got = append(got, u)
	}
	want := render(t, "--set", "certificates.mode=cert-manager", "--set", "createNamespace=true", "--set", "agent.enabled=false",
		"--set", "crds.install=false")
	if kinds(got) == "" || len(got) != len(want) {
		t.Errorf("kustomize renders %d objects (%s), the chart %d (%s)", len(got), kinds(got), len(want), kinds(want))
	}
	for _, w := range want {
		g := find(got, w.GetKind(), w.GetName())
		if g == nil {
			t.Errorf("%s/%s is missing from the kustomize base with the cert-manager component", w.GetKind(), w.GetName())
			continue
		}
		if !equality.Semantic.DeepEqual(g.Object, w.Object) {
			t.Errorf("%s/%s differs:\nkustomize: %v\nchart:     %v", w.GetKind(), w.GetName(), yamlOf(t, g), yamlOf(t, w))
		}
	}
}
