package chart_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// mutatingHook is the webhook named name of the mutating configuration.
func mutatingHook(t *testing.T, objs []*unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	mwc := find(objs, "MutatingWebhookConfiguration", "gpuadmit")
	if mwc == nil {
		t.Fatalf("no MutatingWebhookConfiguration gpuadmit: %s", kinds(objs))
	}
	hooks, _, _ := unstructured.NestedSlice(mwc.Object, "webhooks")
	for _, h := range hooks {
		if h := h.(map[string]any); h["name"] == name {
			return h
		}
	}
	t.Fatalf("no mutating webhook %s", name)
	return nil
}

// hookRules are a webhook's rules as "group resource OPERATIONS".
func hookRules(h map[string]any) []string {
	rules, _, _ := unstructured.NestedSlice(h, "rules")
	var out []string
	for _, r := range rules {
		r := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(r, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(r, "resources")
		ops, _, _ := unstructured.NestedStringSlice(r, "operations")
		for _, g := range groups {
			for _, x := range res {
				out = append(out, g+" "+x+" "+strings.Join(ops, ","))
			}
		}
	}
	return out
}

// hookExpression is the expression of a webhook's i-th matchCondition.
func hookExpression(h map[string]any, i int) string {
	conds, _, _ := unstructured.NestedSlice(h, "matchConditions")
	if i >= len(conds) {
		return ""
	}
	expr, _, _ := unstructured.NestedString(conds[i].(map[string]any), "expression")
	return expr
}

// hookConditions are the names of a webhook's matchConditions.
func hookConditions(h map[string]any) []string {
	conds, _, _ := unstructured.NestedSlice(h, "matchConditions")
	var out []string
	for _, c := range conds {
		out = append(out, c.(map[string]any)["name"].(string))
	}
	return out
}

// TestStampWebhooksLeaveNoCopiedStamp: every template a trusted pod
// creator copies is stamped by gpuadmit first, so a copied stamp never
// survives: mutate-workloads reviews ReplicationControllers (whose
// controller is trusted) and every template whatever it asks for (a GPU
// may be added at pod CREATE, by a LimitRange or another webhook), and
// mutate-resourceclaims reviews the UPDATEs that change a claim's stamp
// (put back), so replicas that record the claim at different times read
// the same user.
func TestStampWebhooksLeaveNoCopiedStamp(t *testing.T) {
	objs := render(t, "--set", "dra.enabled=true")
	w := mutatingHook(t, objs, "mutate-workloads.gpuadmit.io")
	if rules := hookRules(w); !slices.Contains(rules, " replicationcontrollers CREATE,UPDATE") {
		t.Errorf("mutate-workloads rules %q: no CREATE,UPDATE of core replicationcontrollers", rules)
	}
	if conds := hookConditions(w); !slices.Equal(conds, []string{"a-governed-or-stamped-pod-template"}) {
		t.Errorf("mutate-workloads matchConditions %q, want only a-governed-or-stamped-pod-template (a copied stamp in any template is reviewed)", conds)
	} else if expr := hookExpression(w, 0); !strings.Contains(expr, "'gpuadmit.io/requested-by'") || !strings.Contains(expr, "'']") {
		t.Errorf("mutate-workloads matchCondition %q: a template carrying a stamp, or a ReplicationController's, must be reviewed", expr)
	}
	c := mutatingHook(t, objs, "mutate-resourceclaims.gpuadmit.io")
	if rules := hookRules(c); !slices.Equal(rules, []string{"resource.k8s.io resourceclaims CREATE,UPDATE"}) {
		t.Errorf("mutate-resourceclaims rules %q, want CREATE,UPDATE of resourceclaims", rules)
	}
	if conds := hookConditions(c); !slices.Contains(conds, "a-create-or-an-edit-of-the-requesting-user-stamp") {
		t.Errorf("mutate-resourceclaims matchConditions %q: every claim UPDATE would be reviewed, or none", conds)
	}
}
