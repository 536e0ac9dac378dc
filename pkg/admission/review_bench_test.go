package admission

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func BenchmarkReadPodReview(b *testing.B) {
	res := func(m string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse(m)}}
	}
	pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm-server", Namespace: "team-a", UID: "load"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "convert-weights", Image: "x", Resources: res("20480")}},
			Containers:     []corev1.Container{{Name: "server", Image: "x", Resources: res("10240")}},
		}}
	raw, _ := json.Marshal(pod)
	dry := true
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "team-a",
			Name: "llm-server", Operation: admissionv1.Create, DryRun: &dry, Object: runtime.RawExtension{Raw: raw}},
	})
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/validate-pods", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if _, _, bad := readPodReview(r); bad != nil {
			b.Fatal(bad)
		}
	}
}
