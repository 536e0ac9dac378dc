package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// FieldManager is the field manager of the agent's patches.
const FieldManager = "gpuadmit-nvml-agent"

func nodesResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
}

// KubeNodes is a NodePatcher on the API server. It reads and writes Node
// metadata only (the metadata client), which needs get and patch on nodes.
type KubeNodes struct {
	Client metadata.Interface
}

// NodeAnnotation implements NodePatcher.
func (k KubeNodes) NodeAnnotation(ctx context.Context, node, key string) (string, bool, error) {
	obj, err := k.Client.Resource(nodesResource()).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", false, fmt.Errorf("get node %s: %w", node, err)
	}
	v, ok := obj.GetAnnotations()[key]
	return v, ok, nil
}

// PatchNodeAnnotation implements NodePatcher with a JSON merge patch that
// names only the one annotation.
func (k KubeNodes) PatchNodeAnnotation(ctx context.Context, node, key, value string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{key: value}},
	})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	_, err = k.Client.Resource(nodesResource()).Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("patch node %s: %w", node, err)
	}
	return nil
}
