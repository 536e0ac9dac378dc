package policysource_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/pkg/policysource"
)

// configMap is a ConfigMap of gpuadmit-system holding keys.
func configMap(name string, keys ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gpuadmit-system"}, Data: map[string]string{}}
	for _, k := range keys {
		cm.Data[k] = "package gpuadmit.admission\n"
	}
	return cm
}

func TestSources(t *testing.T) {
	tests := []struct {
		name        string
		dir         string
		cms         []*corev1.ConfigMap
		wantSources []string
		wantModules []int
	}{
		{name: "nothing: the built-in policies alone"},
		{name: "the directory first, then the ConfigMaps by name", dir: "/etc/policies",
			cms:         []*corev1.ConfigMap{configMap("b", "x.rego", "x_test.rego", "README"), configMap("a")},
			wantSources: []string{"/etc/policies", "configmap gpuadmit-system/a", "configmap gpuadmit-system/b"},
			wantModules: []int{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range policysource.Sources(tt.dir, tt.cms) {
				got = append(got, s.Name())
			}
			if !slices.Equal(got, tt.wantSources) {
				t.Errorf("sources %q, want %q", got, tt.wantSources)
			}
			var modules []int
			for _, cm := range tt.cms {
				modules = append(modules, policysource.Modules(cm))
			}
			if !slices.Equal(modules, tt.wantModules) {
				t.Errorf("modules %v, want %v (cms sorted by name)", modules, tt.wantModules)
			}
		})
	}
}

func TestSelector(t *testing.T) {
	if sel, err := policysource.Selector("gpuadmit.io/policy=true"); err != nil || sel.String() != "gpuadmit.io/policy=true" {
		t.Errorf("Selector = %v, %v", sel, err)
	}
	if _, err := policysource.Selector("a b"); err == nil || !strings.Contains(err.Error(), `policy ConfigMap selector "a b": `) {
		t.Errorf("error = %v, want it to name the selector", err)
	}
}
