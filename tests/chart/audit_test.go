package chart_test

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/openreports"
)

// TestOpenReportsRBAC: config.audit.openReports turns the writer on in the
// rendered configuration and grants the Reports' verbs; off (the
// default), the ServiceAccount gets nothing of openreports.io.
func TestOpenReportsRBAC(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			objs := render(t, "--set", fmt.Sprintf("config.audit.openReports=%v", on))
			rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "gpuadmit-webhook").Object, "rules")
			var verbs []string
			for _, r := range rules {
				groups, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
				if slices.Contains(groups, "openreports.io") {
					v, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
					verbs = append(verbs, v...)
				}
			}
			granted := slices.Contains(verbs, "create") && slices.Contains(verbs, "delete")
			cm := find(objs, "ConfigMap", "gpuadmit-config")
			data, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
			cfg, _, err := config.Parse([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if granted != on || cfg.OpenReportsEnabled() != on {
				t.Errorf("openReports=%v: rules grant Reports %v, configuration enables the writer %v", on, granted, cfg.OpenReportsEnabled())
			}
		})
	}
}

// TestOpenReportsRBACOwnReportsOnly: with the writer on, every verb on
// Reports but create (whose name RBAC cannot know) is limited to the one
// name gpuadmit writes (openreports.Name), and create comes alone: no rule
// lets gpuadmit read, change or delete another tool's Reports.
func TestOpenReportsRBACOwnReportsOnly(t *testing.T) {
	objs := render(t, "--set", "config.audit.openReports=true")
	rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "gpuadmit-webhook").Object, "rules")
	var verbs []string
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		if !slices.Contains(groups, "openreports.io") && !slices.Contains(groups, "*") {
			continue
		}
		rv, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		verbs = append(verbs, rv...)
		if slices.Equal(rv, []string{"create"}) {
			continue
		}
		if !slices.Equal(names, []string{openreports.Name}) {
			t.Errorf("rule %v grants %v on Reports of any name, want only %q", rule, rv, openreports.Name)
		}
	}
	for _, v := range []string{"get", "list", "create", "update", "delete"} {
		if !slices.Contains(verbs, v) {
			t.Errorf("the writer needs %s on Reports; the rules grant %v", v, verbs)
		}
	}
	for _, v := range []string{"*", "watch", "patch", "deletecollection"} {
		if slices.Contains(verbs, v) {
			t.Errorf("the rules grant %s on Reports, which the writer never uses", v)
		}
	}
}
