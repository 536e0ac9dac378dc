package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

// policyJSON is a custom "Policy" (plural policies, not kind + "s") of
// team-a running replicas pods of one GPU and memMiB each.
func policyJSON(replicas int, memMiB int64) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"example.com/v1","kind":"Policy","metadata":{"name":"train","namespace":"team-a"},
		"spec":{"replicas":%d,"template":{"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"%d"}}}]}}}}`,
		replicas, memMiB)
}

// TestWorkloadScaleOfConfiguredPlural attacks the scale subresource of a
// custom kind whose plural is not its kind in lower case plus "s": a
// scale review names the configured plural, and is checked (a scale past
// the limit refused), never let through as a resource gpuadmit does not
// know.
func TestWorkloadScaleOfConfiguredPlural(t *testing.T) {
	policy := workload.Kind{Group: "example.com", Version: "v1", Kind: "Policy", Resource: "policies",
		ScalePath: workload.MustPath("spec.replicas"),
		Templates: []workload.Template{{Path: workload.MustPath("spec.template"),
			Replicas: []workload.Factor{{Path: workload.MustPath("spec.replicas"), Default: 1}}}}}
	for _, tt := range []struct {
		name     string
		replicas int
		allowed  bool
	}{
		{name: "scaled past the limit", replicas: 4},
		{name: "scaled within the limit", replicas: 3, allowed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakeReader{obj: policyJSON(1, 8192)}
			h := workloadHandler(t, r, false)
			kinds, err := workload.NewKinds([]workload.Kind{policy})
			if err != nil {
				t.Fatal(err)
			}
			h.Kinds = kinds
			req := workloadReview(admissionv1.Update, "scale", scaleJSON(tt.replicas), scaleJSON(1), false)
			req.Resource = metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "policies"}
			resp := h.Handle(context.Background(), req)
			if r.reads != 1 {
				t.Fatalf("the Policy was read %d times, want 1: the scale review of policies was not mapped to its kind", r.reads)
			}
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v: %+v", resp.Allowed, tt.allowed, resp.Result)
			}
			if !tt.allowed && (resp.Result == nil || !strings.Contains(resp.Result.Message, fmt.Sprintf("%d pods x 8192 MiB", tt.replicas))) {
				t.Fatalf("result %+v does not name the pods past the limit", resp.Result)
			}
		})
	}
}
