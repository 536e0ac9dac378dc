package nodeagent_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/nodeagent"
)

// TestKubeNodes: the patch is a JSON merge patch naming only the annotation,
// sent with the agent's field manager; reads see what was written.
func TestKubeNodes(t *testing.T) {
	tests := []struct {
		name      string
		before    map[string]string
		value     string
		wantPatch string
	}{
		{
			name:      "new annotation",
			before:    map[string]string{"keep": "me"},
			value:     `[{"uuid":"GPU-a"}]`,
			wantPatch: `{"metadata":{"annotations":{"gpuadmit.io/gpu-devices":"[{\"uuid\":\"GPU-a\"}]"}}}`,
		},
		{
			name:      "replaced annotation",
			before:    map[string]string{devices.NodeDevicesAnnotation: "[]"},
			value:     `[]`,
			wantPatch: `{"metadata":{"annotations":{"gpuadmit.io/gpu-devices":"[]"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
				ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: tt.before},
			}
			scheme := fake.NewTestScheme()
			scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, &metav1.PartialObjectMetadata{})
			client := fake.NewSimpleMetadataClient(scheme, node)
			var patches []k8stesting.PatchAction
			client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
				patches = append(patches, a.(k8stesting.PatchAction))
				return false, nil, nil
			})
			k := nodeagent.KubeNodes{Client: client}
			ctx := context.Background()
			if err := k.PatchNodeAnnotation(ctx, "n1", devices.NodeDevicesAnnotation, tt.value); err != nil {
				t.Fatal(err)
			}
			if len(patches) != 1 {
				t.Fatalf("%d patches, want 1", len(patches))
			}
			if p := patches[0]; p.GetPatchType() != types.MergePatchType || string(p.GetPatch()) != tt.wantPatch || p.GetName() != "n1" {
				t.Errorf("patch %s %s of %s, want %s %s", p.GetPatchType(), p.GetPatch(), p.GetName(), types.MergePatchType, tt.wantPatch)
			}
			got, ok, err := k.NodeAnnotation(ctx, "n1", devices.NodeDevicesAnnotation)
			if err != nil || !ok || got != tt.value {
				t.Errorf("NodeAnnotation = %q, %v, %v; want %q", got, ok, err, tt.value)
			}
			if keep, _, _ := k.NodeAnnotation(ctx, "n1", "keep"); keep != tt.before["keep"] {
				t.Errorf("other annotation = %q, want %q", keep, tt.before["keep"])
			}
			if _, _, err := k.NodeAnnotation(ctx, "absent", devices.NodeDevicesAnnotation); err == nil {
				t.Error("NodeAnnotation of a missing node: want an error")
			}
		})
	}
}
