package chart_test

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// renderFor runs helm template for Kubernetes version with args (no
// templateHelm: its version is fixed) and decodes every object.
func renderFor(t *testing.T, version string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	all := append([]string{"template", "gpuadmit", chartDir, "--namespace", "gpuadmit-system", "--kube-version", version}, args...)
	out, err := exec.Command(helmBin(t), all...).Output()
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(all, " "), err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(out), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// draParts says which of the chart's DRA parts objs hold: the DeviceClasses
// the rendered configuration governs, the ResourceClaim webhook, the pod
// webhooks' ResourceClaimTemplate and named-claim condition, the RBAC on resource.k8s.io.
func draParts(t *testing.T, objs []*unstructured.Unstructured) (classes int, claimHook, templates, rbac bool) {
	t.Helper()
	cfg, _, err := config.Parse([]byte(nested(t, find(objs, "ConfigMap", "gpuadmit-config"), "data", "config.yaml")))
	if err != nil {
		t.Fatalf("the rendered configuration is not one the server accepts: %v", err)
	}
	classes = len(config.DeviceClasses(cfg))
	v := yamlOf(t, find(objs, "ValidatingWebhookConfiguration", "gpuadmit"))
	m := yamlOf(t, find(objs, "MutatingWebhookConfiguration", "gpuadmit"))
	claimHook = strings.Contains(v, "validate-resourceclaims.gpuadmit.io")
	// A pod naming an existing claim is reviewed too: the claim burns its
	// GPU-hour budgets while the pod runs (a spent budget denies the pod).
	templates = strings.Contains(v, "resourceClaimTemplateName") && strings.Contains(m, "resourceClaimTemplateName") &&
		strings.Contains(v, "has(rc.resourceClaimName)")
	rbac = strings.Contains(yamlOf(t, find(objs, "ClusterRole", "gpuadmit-webhook")), "resource.k8s.io")
	return classes, claimHook, templates, rbac
}

// TestDRAWhereServed: the chart governs DRA claims where the API server
// serves resource.k8s.io/v1 at 1.34 or later (dra.enabled auto, from helm's
// capabilities) and renders none of its DRA parts on 1.30 (whose pods have
// no resourceClaimTemplateName, and whose webhook would watch an API that is
// not there); dra.enabled true and false decide alone. Whatever it decides,
// all four parts go together: never claims admitted by the webhook's
// configuration but not charged (the configuration's DeviceClasses) or
// charged but never reviewed.
func TestDRAWhereServed(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		args          []string
		want          bool
	}{
		{name: "1.30", version: minKubeVersion},
		{name: "1.33", version: "v1.33.4"},
		{name: "1.37 serving resource.k8s.io/v1", version: "v1.37.0", args: []string{"--api-versions", "resource.k8s.io/v1"}, want: true},
		{name: "1.37", version: "v1.37.0", want: true},
		{name: "1.30, dra.enabled true", version: minKubeVersion, args: []string{"--set", "dra.enabled=true"}, want: true},
		{name: "1.37, dra.enabled false", version: "v1.37.0", args: []string{"--api-versions", "resource.k8s.io/v1", "--set", "dra.enabled=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderFor(t, tc.version, tc.args...)
			classes, claimHook, templates, rbac := draParts(t, objs)
			if (classes > 0) != tc.want || claimHook != tc.want || templates != tc.want || rbac != tc.want {
				t.Errorf("DeviceClasses governed %d, ResourceClaim webhook %v, ResourceClaimTemplate condition %v, RBAC %v; want all %v",
					classes, claimHook, templates, rbac, tc.want)
			}
			if find(objs, "ValidatingAdmissionPolicy", "gpuadmit-nvml-agent-own-node") == nil {
				t.Errorf("no agent admission policy for %s: %s", tc.version, kinds(objs))
			}
		})
	}
}

// TestCriticalPodsQuota: with a critical priority class outside
// kube-system, a ResourceQuota scoped to that class lets the replicas be
// created (GKE refuses them without one); none where it is not needed or
// resourceQuota is off.
func TestCriticalPodsQuota(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		class string
	}{
		{name: "the defaults", class: "system-cluster-critical"},
		{name: "system-node-critical", args: []string{"--set", "priorityClassName=system-node-critical"}, class: "system-node-critical"},
		{name: "many replicas", args: []string{"--set", "replicas=60"}, class: "system-cluster-critical"},
		{name: "off", args: []string{"--set", "resourceQuota=false"}},
		{name: "another class", args: []string{"--set", "priorityClassName=gpu-admission"}},
		{name: "no class", args: []string{"--set", "priorityClassName="}},
		{name: "in kube-system", args: []string{"--namespace", "kube-system"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.args...)
			q := find(objs, "ResourceQuota", "gpuadmit-critical-pods")
			if tc.class == "" {
				if q != nil {
					t.Errorf("a ResourceQuota is rendered: %s", yamlOf(t, q))
				}
				return
			}
			if q == nil {
				t.Fatalf("no ResourceQuota gpuadmit-critical-pods: %s", kinds(objs))
			}
			exprs, _, _ := unstructured.NestedSlice(q.Object, "spec", "scopeSelector", "matchExpressions")
			want := []any{map[string]any{"scopeName": "PriorityClass", "operator": "In", "values": []any{tc.class}}}
			if !slices.EqualFunc(exprs, want, func(a, b any) bool { return yamlString(t, a) == yamlString(t, b) }) {
				t.Errorf("scopeSelector %v, want %v", exprs, want)
			}
			pod, _ := webhookPod(t, objs)
			replicas := num(find(objs, "Deployment", "gpuadmit-webhook"), "spec", "replicas")
			if pod["priorityClassName"] != tc.class || q.GetNamespace() != find(objs, "Deployment", "gpuadmit-webhook").GetNamespace() {
				t.Errorf("the quota covers %s in %s; the replicas run as %v", tc.class, q.GetNamespace(), pod["priorityClassName"])
			}
			if hard, err := strconv.ParseInt(nested(t, q, "spec", "hard", "pods"), 10, 64); err != nil || hard < replicas+1 {
				t.Errorf("the quota allows %d pods (%v): a rolling update of %d replicas needs %d", hard, err, replicas, replicas+1)
			}
		})
	}
}

func yamlString(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
