package admission

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

// read decodes the workload of req: its kind (nil with the answer when
// the review is not about a known workload) and objects. A scale review
// reads the workload and writes the Scale's replicas into a copy.
func (v *WorkloadValidator) read(ctx context.Context, req admission.Request) (*applied, admission.Response, string) {
	if req.SubResource == "scale" {
		return v.readScale(ctx, req)
	}
	if req.SubResource != "" {
		return nil, admission.Allowed(""), reasonNonGPU
	}
	k := v.Kinds.Lookup(req.Kind.Group, req.Kind.Version, req.Kind.Kind)
	if k == nil {
		return nil, admission.Allowed(""), reasonNonGPU // a kind gpuadmit is not configured to read
	}
	if len(req.Object.Raw) == 0 {
		return nil, admission.Errored(http.StatusBadRequest, fmt.Errorf("gpuadmit: the review carries no %s object", k.Kind)), reasonBadRequest
	}
	obj, err := workload.Decode(req.Object.Raw)
	if err != nil {
		return nil, admission.Errored(http.StatusBadRequest, fmt.Errorf("gpuadmit: %s: %w", k.Kind, err)), reasonBadRequest
	}
	a := &applied{kind: k, obj: obj, name: req.Name}
	if a.name == "" {
		a.name = nameOf(obj)
	}
	if len(req.OldObject.Raw) > 0 {
		a.old, _ = workload.Decode(req.OldObject.Raw) // unreadable: checked as a CREATE
	}
	return a, admission.Response{}, ""
}

// readScale reads a scale review: its workload (by the review's resource,
// the kind's configured plural), with the Scale's replicas written in;
// the object read is the old one. A scale down is allowed unread; a
// workload that cannot be read is denied.
func (v *WorkloadValidator) readScale(ctx context.Context, req admission.Request) (*applied, admission.Response, string) {
	k := v.kindOfResource(req.Resource)
	if k == nil {
		return nil, admission.Allowed(""), reasonNonGPU
	}
	replicas, err := scaleReplicas(req.Object.Raw)
	if err != nil {
		return nil, admission.Errored(http.StatusBadRequest, fmt.Errorf("gpuadmit: the Scale of %s %s/%s: %w", k.Kind, req.Namespace, req.Name, err)), reasonBadRequest
	}
	if old, err := scaleReplicas(req.OldObject.Raw); err == nil && len(req.OldObject.Raw) > 0 && replicas <= old {
		return nil, admission.Allowed(""), reasonUnchanged
	}
	gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
	cur, err := v.Reader.Read(ctx, gvk, req.Namespace, req.Name)
	if err != nil {
		return nil, denyWorkload(fmt.Errorf("gpuadmit: scaling %s %s/%s to %d replicas is refused: its pod template could not be read to check it: %w",
			k.Kind, req.Namespace, req.Name, replicas, err)), reasonError
	}
	next, err := workload.Decode(mustJSON(cur))
	if err == nil {
		err = k.SetScale(next, replicas)
	}
	if err != nil {
		return nil, denyWorkload(fmt.Errorf("gpuadmit: scaling %s %s/%s is refused: %w", k.Kind, req.Namespace, req.Name, err)), reasonError
	}
	return &applied{kind: k, obj: next, old: cur, name: req.Name}, admission.Response{}, ""
}

// kindOfResource is the kind whose plural resource name (configured with
// the kind: rayclusters, leaderworkersets) r names.
func (v *WorkloadValidator) kindOfResource(r metav1.GroupVersionResource) *workload.Kind {
	var found *workload.Kind
	v.Kinds.Each(func(k *workload.Kind) {
		if k.Group == r.Group && k.Version == r.Version && k.Resource != "" && k.Resource == r.Resource {
			found = k
		}
	})
	return found
}

// scaleReplicas reads spec.replicas of an autoscaling/v1 Scale (0 when
// unset); a negative count is an error.
func scaleReplicas(raw []byte) (int64, error) {
	if len(raw) == 0 {
		return 0, fmt.Errorf("no Scale object")
	}
	var s struct {
		Spec struct {
			Replicas *int64 `json:"replicas"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("decoding the Scale: %w", err)
	}
	if s.Spec.Replicas == nil {
		return 0, nil
	}
	if *s.Spec.Replicas < 0 {
		return 0, fmt.Errorf("negative replicas %d", *s.Spec.Replicas)
	}
	return *s.Spec.Replicas, nil
}

func nameOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
