package chart_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/hack/manifestgen"
)

// policyKind is a custom kind whose plural is not its kind in lower case
// plus "s" (Policy: policies), with a scale subresource.
const policyKind = `config:
  workloads:
    kinds:
      - group: example.com
        version: v1
        kind: Policy
        resource: %s
        scaleReplicasPath: spec.replicas
        templates: [{path: spec.template, replicas: [{path: spec.replicas}]}]
`

// workloadRuleResources are the resources of the validate-workloads
// webhook's rules of apiGroup group.
func workloadRuleResources(t *testing.T, objs []*unstructured.Unstructured, group string) []string {
	t.Helper()
	vwc := find(objs, "ValidatingWebhookConfiguration", "gpuadmit")
	if vwc == nil {
		t.Fatalf("no ValidatingWebhookConfiguration gpuadmit: %s", kinds(objs))
	}
	hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	var out []string
	for _, h := range hooks {
		h := h.(map[string]any)
		if h["name"] != "validate-workloads.gpuadmit.io" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(h, "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			if groups, _, _ := unstructured.NestedStringSlice(r, "apiGroups"); slices.Contains(groups, group) {
				res, _, _ := unstructured.NestedStringSlice(r, "resources")
				out = append(out, res...)
			}
		}
	}
	return out
}

// TestWorkloadKindPlural: the chart names a configured kind by its
// configured plural resource, in the validate-workloads webhook's rules
// (the resource and its scale subresource) and in the webhook's RBAC,
// never by its kind in lower case plus "s" (which the API server would
// never match: the kind's objects would go unchecked).
func TestWorkloadKindPlural(t *testing.T) {
	objs := render(t, "-f", writeValues(t, strings.ReplaceAll(policyKind, "%s", "policies")))
	if got := workloadRuleResources(t, objs, "example.com"); !slices.Equal(got, []string{"policies", "policies/scale"}) {
		t.Errorf("validate-workloads rules of example.com name %q, want [policies policies/scale]", got)
	}
	role := grants(find(objs, "ClusterRole", "gpuadmit-webhook"))
	if !slices.Contains(role, "example.com policies get,list,watch") || slices.ContainsFunc(role, func(g string) bool { return strings.Contains(g, "policys") }) {
		t.Errorf("the webhook's ClusterRole grants %q, want get,list,watch on example.com policies", role)
	}
	shipped := render(t)
	for group, want := range map[string][]string{"ray.io": {"rayclusters", "rayjobs"}, "jobset.x-k8s.io": {"jobsets"},
		"leaderworkerset.x-k8s.io": {"leaderworkersets", "leaderworkersets/scale"}} {
		got := workloadRuleResources(t, shipped, group)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("shipped: validate-workloads rules of %s name %q, want %q", group, got, want)
		}
	}
}

// TestWorkloadKindPluralRefused: a custom kind without its plural, or
// with one that is not a DNS label, does not render.
func TestWorkloadKindPluralRefused(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"no resource", strings.ReplaceAll(policyKind, "        resource: %s\n", ""), "Policy needs its plural resource"},
		{"upper case", strings.ReplaceAll(policyKind, "%s", "Policies"), "resource"},
		{"a dotted name", strings.ReplaceAll(policyKind, "%s", "policies.example.com"), "resource"},
	} {
		_, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, "-f", writeValues(t, tc.values))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
