// Package chart_test tests the Helm chart (charts/gpuadmit) with helm built
// from its Go module (tests/tools): lint, rendering with the default values
// and the values files under charts/gpuadmit/ci, the schema's refusals, one
// source of truth for resource names and image names, the kustomize base
// under manifests/ generated from the chart, and install, upgrade and
// uninstall on a real kube-apiserver.
package chart_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/internal/envtestgate"
	"github.com/gpuadmit/gpuadmit/internal/manifestgen"
)

const chartDir = "../../charts/gpuadmit"

// helmBin returns the helm the project builds (make integration builds it
// beside kube-apiserver).
func helmBin(t testing.TB) string {
	t.Helper()
	h := filepath.Join(envtestgate.Assets(t), "helm")
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("helm is not built in %s: run `make helm` (make integration builds it): %v", filepath.Dir(h), err)
	}
	return h
}

// render runs helm template with args and decodes every object.
func render(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifestgen.Render(context.Background(), helmBin(t), chartDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d.YAML), &u.Object); err != nil {
			t.Fatalf("%s: %v\n%s", d.Template, err, d.YAML)
		}
		out = append(out, u)
	}
	return out
}

// find returns the object of kind and name (nil when absent).
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func kinds(objs []*unstructured.Unstructured) string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(ks, " ")
}

// nested reads a string field, failing t when it is missing.
func nested(t *testing.T, o *unstructured.Unstructured, fields ...string) string {
	t.Helper()
	v, ok, err := unstructured.NestedString(o.Object, fields...)
	if err != nil || !ok {
		t.Fatalf("%s/%s has no %s: %v", o.GetKind(), o.GetName(), strings.Join(fields, "."), err)
	}
	return v
}

func yamlOf(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	b, err := yaml.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// num reads a number field (YAML decodes numbers as float64), or -1.
func num(o *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, fields...)
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	}
	return -1
}
