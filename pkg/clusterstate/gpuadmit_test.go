package clusterstate_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
)

// cm is a ConfigMap with labels and data.
func cm(ns, name string, lbls, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}, Data: data}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name     string
		objects  []runtime.Object
		want     string
		notFound bool
		errSub   string
	}{
		{name: "the chart's ConfigMap", objects: []runtime.Object{cm("gpuadmit-system", "gpuadmit-config", nil, map[string]string{"config.yaml": "kind: Configuration\n"})},
			want: "kind: Configuration\n"},
		{name: "not installed", objects: []runtime.Object{cm("other", "gpuadmit-config", nil, map[string]string{"config.yaml": ""})}, notFound: true},
		{name: "without its key", objects: []runtime.Object{cm("gpuadmit-system", "gpuadmit-config", nil, nil)},
			errSub: "ConfigMap gpuadmit-system/gpuadmit-config has no key config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clusterstate.Config(t.Context(), fake.NewClientset(tt.objects...), "gpuadmit-system")
			switch {
			case tt.notFound:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("error %v, want not found", err)
				}
			case tt.errSub != "":
				if err == nil || !strings.Contains(err.Error(), tt.errSub) {
					t.Fatalf("error %v, want %q", err, tt.errSub)
				}
			case err != nil || got != tt.want:
				t.Fatalf("Config = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPolicyConfigMaps(t *testing.T) {
	policy := map[string]string{"gpuadmit.io/policy": "true"}
	c := fake.NewClientset(cm("gpuadmit-system", "a", policy, nil), cm("gpuadmit-system", "b", policy, nil),
		cm("gpuadmit-system", "unlabelled", nil, nil), cm("elsewhere", "c", policy, nil))
	list, err := clusterstate.PolicyConfigMaps(t.Context(), c, "gpuadmit-system", labels.SelectorFromSet(policy))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(list); !slices.Equal(got, []string{"gpuadmit-system/a", "gpuadmit-system/b"}) {
		t.Errorf("PolicyConfigMaps = %q, want a and b of gpuadmit-system", got)
	}
}
