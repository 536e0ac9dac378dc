package testquota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// New is a ResourceQuota with spec.hard set from hard (key to quantity
// string; a string no quantity parses to panics), and the UID
// "uid-rq-<namespace>-<name>".
func New(namespace, name string, hard map[string]string) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		UID: types.UID("uid-rq-" + namespace + "-" + name)}}
	q.Spec.Hard = corev1.ResourceList{}
	for k, v := range hard {
		q.Spec.Hard[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return q
}
