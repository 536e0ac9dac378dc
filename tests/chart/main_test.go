// Package chart_test tests the Helm chart (charts/gpuadmit) with helm built
// from its Go module (tests/tools): lint, rendering with the default values
// and the values files under charts/gpuadmit/ci, the schema's refusals, one
// source of truth for resource names and image names, the kustomize base
// under manifests/ generated from the chart, install, upgrade and
// uninstall on a real kube-apiserver, and there the annotation guards'
// ValidatingAdmissionPolicies refusing whom they should, with their messages.
package chart_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/hack/manifestgen"
	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
)

const chartDir = "../../charts/gpuadmit"

// minKubeVersion is the oldest Kubernetes the chart supports (Chart.yaml's
// kubeVersion); renderKubeVersion is the one helm template renders for here
// (DRA's resource.k8s.io/v1 served: dra.enabled auto governs claims).
const (
	minKubeVersion    = "v1.30.0"
	renderKubeVersion = "v1.37.0"
)

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

// templateHelm returns a helm that renders (template, lint) for
// renderKubeVersion: a script running helmBin with --kube-version. helm built
// from its Go module (tests/tools) has no Kubernetes version stamped in and
// renders for v1.20.0 unless told, which the chart's kubeVersion refuses;
// manifestgen (make manifests) runs the helm it is given.
func templateHelm(t testing.TB) string {
	t.Helper()
	h := helmBin(t)
	script := filepath.Join(t.TempDir(), "helm")
	body := "#!/bin/sh\nexec '" + strings.ReplaceAll(h, "'", `'\''`) + "' \"$@\" --kube-version " + renderKubeVersion + "\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// render runs helm template (for renderKubeVersion) with args and decodes
// every object.
func render(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, args...)
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

// webhookPod returns the webhook Deployment's pod spec and its container.
func webhookPod(t *testing.T, objs []*unstructured.Unstructured) (pod, container map[string]any) {
	t.Helper()
	d := find(objs, "Deployment", "gpuadmit-webhook")
	if d == nil {
		t.Fatalf("no Deployment/gpuadmit-webhook in %s", kinds(objs))
	}
	pod, _, _ = unstructured.NestedMap(d.Object, "spec", "template", "spec")
	cs, _, _ := unstructured.NestedSlice(pod, "containers")
	return pod, cs[0].(map[string]any)
}

// webhookArgs returns the webhook container's arguments.
func webhookArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	_, c := webhookPod(t, objs)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	return args
}

// ingress describes a NetworkPolicy's ingress rules, one a rule: its ports,
// then its sources ("any" without from): "9443 from 10.0.0.0/8 or pod
// app=x", a peer with two selectors as "namespace k=v and pod k=v".
func ingress(np *unstructured.Unstructured) []string {
	rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	var out []string
	for _, r := range rules {
		var ports, from []string
		ps, _, _ := unstructured.NestedSlice(r.(map[string]any), "ports")
		for _, p := range ps {
			ports = append(ports, fmt.Sprint(p.(map[string]any)["port"]))
		}
		peers, _, _ := unstructured.NestedSlice(r.(map[string]any), "from")
		for _, p := range peers {
			from = append(from, peer(p.(map[string]any)))
		}
		if len(from) == 0 {
			from = []string{"any"}
		}
		out = append(out, strings.Join(ports, ",")+" from "+strings.Join(from, " or "))
	}
	return out
}

func peer(p map[string]any) string {
	var parts []string
	if cidr, ok, _ := unstructured.NestedString(p, "ipBlock", "cidr"); ok {
		parts = append(parts, cidr)
	}
	for _, sel := range []string{"namespaceSelector", "podSelector"} {
		if labels, ok, _ := unstructured.NestedStringMap(p, sel, "matchLabels"); ok {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				kv = append(kv, k+"="+labels[k])
			}
			parts = append(parts, strings.TrimSuffix(sel, "Selector")+" "+strings.Join(kv, ","))
		}
	}
	return strings.Join(parts, " and ")
}

// grants describes a ClusterRole's rules, one a resource or URL:
// "group resource verbs" ("resource/name" with resourceNames), "URL verbs".
func grants(role *unstructured.Unstructured) []string {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range rules {
		r := r.(map[string]any)
		str := func(f string) []string { s, _, _ := unstructured.NestedStringSlice(r, f); return s }
		verbs := strings.Join(str("verbs"), ",")
		for _, u := range str("nonResourceURLs") {
			out = append(out, u+" "+verbs)
		}
		for _, g := range str("apiGroups") {
			for _, res := range str("resources") {
				if names := str("resourceNames"); len(names) > 0 {
					res += "/" + strings.Join(names, ",")
				}
				out = append(out, strings.TrimSpace(g+" "+res)+" "+verbs)
			}
		}
	}
	return out
}
