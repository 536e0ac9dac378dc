package testns

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// New is a Namespace with the given labels (nil: none) and the UID
// "uid-ns-<name>".
func New(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-ns-" + name), Labels: labels},
	}
}

// Known upserts a Namespace without labels for each name into sink (a
// ledger), so that decisions in those namespaces can be made.
func Known(sink interface{ UpsertNamespace(*corev1.Namespace) }, names ...string) {
	for _, n := range names {
		sink.UpsertNamespace(New(n, nil))
	}
}
