package chart_test

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// TestOpenReportsRBAC: config.audit.openReports turns the writer on in the
// rendered configuration and grants the Reports' verbs; off (the
// default), the ServiceAccount gets nothing of openreports.io.
func TestOpenReportsRBAC(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			objs := render(t, "--set", fmt.Sprintf("config.audit.openReports=%v", on))
			rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "gpuadmit-webhook").Object, "rules")
			granted := false
			for _, r := range rules {
				groups, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
				if slices.Contains(groups, "openreports.io") {
					verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
					granted = slices.Contains(verbs, "create") && slices.Contains(verbs, "delete")
				}
			}
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
