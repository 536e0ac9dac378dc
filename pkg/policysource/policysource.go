package policysource

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuadmit/gpuadmit/policy"
)

// Selector parses a configuration's policy.configMapSelector.
func Selector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("policy ConfigMap selector %q: %w", s, err)
	}
	return sel, nil
}

// Sources returns the operator policy sources in the order the webhook
// loads them after the built-in ones: the directory dir (none when empty),
// then each ConfigMap. It sorts cms by name, in place.
func Sources(dir string, cms []*corev1.ConfigMap) []policy.Source {
	slices.SortFunc(cms, func(a, b *corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	var sources []policy.Source
	if dir != "" {
		sources = append(sources, policy.Dir(dir))
	}
	for _, cm := range cms {
		sources = append(sources, policy.Map(Name(cm), cm.Data))
	}
	return sources
}

// Name is the name of a ConfigMap's source, which the engine's messages
// and module file names carry.
func Name(cm *corev1.ConfigMap) string { return "configmap " + cm.Namespace + "/" + cm.Name }

// Modules counts the modules (tests included) a ConfigMap holds: its keys
// ending in .rego.
func Modules(cm *corev1.ConfigMap) int {
	n := 0
	for k := range cm.Data {
		if strings.HasSuffix(k, ".rego") {
			n++
		}
	}
	return n
}
