package chart_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/policysource"
)

// TestTenantReadAccess: rbac.tenantReadAccess (off by default) grants the
// groups of rbac.tenantReadGroups get, and get alone, on exactly the
// ConfigMaps the CLI reads (the configuration, the chart's policy
// ConfigMap and the accepted set, the names the CLI uses), in the release
// namespace; no other resource, verb or ConfigMap.
func TestTenantReadAccess(t *testing.T) {
	if objs := render(t); find(objs, "Role", "gpuadmit-tenant-read") != nil || find(objs, "RoleBinding", "gpuadmit-tenant-read") != nil {
		t.Fatal("rendered without rbac.tenantReadAccess: a tenant read Role or RoleBinding")
	}
	for _, tt := range []struct {
		args       []string
		wantGroups []string
		// fullname is the release's names' prefix (fullnameOverride).
		fullname string
	}{
		{[]string{"--set", "rbac.tenantReadAccess=true"}, []string{"system:authenticated"}, "gpuadmit"},
		{[]string{"--set", "rbac.tenantReadAccess=true", "--set", "rbac.tenantReadGroups={ml-users,ml-leads}"}, []string{"ml-users", "ml-leads"}, "gpuadmit"},
		{[]string{"--set", "rbac.tenantReadAccess=true", "--set", "fullnameOverride=gpuadmit-staging"}, []string{"system:authenticated"}, "gpuadmit-staging"},
	} {
		objs := render(t, append(tt.args, "--namespace", "gpu-system")...)
		role, binding := find(objs, "Role", tt.fullname+"-tenant-read"), find(objs, "RoleBinding", tt.fullname+"-tenant-read")
		if role == nil || binding == nil {
			t.Fatalf("%q: no Role or RoleBinding gpuadmit-tenant-read", tt.args)
		}
		if role.GetNamespace() != "gpu-system" || binding.GetNamespace() != "gpu-system" {
			t.Errorf("%q: in namespace %q and %q, want the release's", tt.args, role.GetNamespace(), binding.GetNamespace())
		}
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		if len(rules) != 1 {
			t.Fatalf("%q: rules %v, want one", tt.args, rules)
		}
		rule := rules[0].(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		wantNames := []string{clusterstate.ConfigMapName, tt.fullname + "-policy", policysource.AcceptedConfigMap}
		if !slices.Equal(groups, []string{""}) || !slices.Equal(resources, []string{"configmaps"}) || !slices.Equal(verbs, []string{"get"}) ||
			!slices.Equal(names, wantNames) {
			t.Errorf("%q: rule %v, want get on configmaps %q alone", tt.args, rule, wantNames)
		}
		if find(objs, "ConfigMap", tt.fullname+"-policy") == nil {
			t.Errorf("%q: the chart renders no ConfigMap %s-policy, which the Role names", tt.args, tt.fullname)
		}
		subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
		var got []string
		for _, s := range subjects {
			sub := s.(map[string]any)
			if sub["kind"] != "Group" {
				t.Errorf("%q: subject %v is not a Group", tt.args, sub)
			}
			got = append(got, sub["name"].(string))
		}
		if !slices.Equal(got, tt.wantGroups) {
			t.Errorf("%q: bound to %q, want %q", tt.args, got, tt.wantGroups)
		}
	}
}
