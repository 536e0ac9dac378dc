package peer

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/frameworks/constraint/pkg/apis/constraints"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client/drivers/rego"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client/drivers/rego/schema"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client/reviews"
	"github.com/open-policy-agent/frameworks/constraint/pkg/core/templates"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// templateKind is the constraint kind the template defines.
const templateKind = "K8sGpuMemQuota"

// templateRego is the template's policy: the namespace's GPU memory (the
// pods synced into the inventory, less terminated ones and the reviewed
// pod itself) plus the reviewed pod's must not exceed limitMiB.
// nvidia.com/gpumem is per device, so a container takes gpumem x gpu.
// Quantities are parsed with units.parse: the API server writes 12000 as
// "12k", which to_number rejects (and the pod would silently not count).
const templateRego = `package k8sgpumemquota

container_mem(c) := units.parse(object.get(c, ["resources", "limits", "nvidia.com/gpumem"], "0")) *
	units.parse(object.get(c, ["resources", "limits", "nvidia.com/gpu"], "1"))

pod_mem(pod) := sum([container_mem(c) | some c in pod.spec.containers])

used(ns, name) := sum([pod_mem(p) |
	some pname, p in data.inventory.namespace[ns].v1.Pod
	pname != name
	not p.status.phase in {"Succeeded", "Failed"}
])

violation contains {"msg": msg, "details": {"needMiB": need, "usedMiB": u, "limitMiB": limit}} if {
	input.review.operation == "CREATE"
	pod := input.review.object
	need := pod_mem(pod)
	need > 0
	ns := input.review.namespace
	u := used(ns, pod.metadata.name)
	limit := input.parameters.limitMiB
	u + need > limit
	msg := sprintf("namespace %q: nvidia.com/gpumem: pod needs %d MiB, %d MiB used, limit %d MiB", [ns, need, u, limit])
}
`

// gatekeeper is the constraint framework's client with the template, one
// constraint and the synced pods.
type gatekeeper struct {
	client *client.Client
}

func newGatekeeper(ctx context.Context, limitMiB int64) (*gatekeeper, error) {
	driver, err := rego.New()
	if err != nil {
		return nil, fmt.Errorf("rego driver: %w", err)
	}
	c, err := client.NewClient(client.Targets(podTarget{}), client.Driver(driver),
		client.EnforcementPoints(constraints.WebhookEnforcementPoint))
	if err != nil {
		return nil, fmt.Errorf("constraint client: %w", err)
	}
	if _, err := c.AddTemplate(ctx, gpuMemTemplate()); err != nil {
		return nil, fmt.Errorf("adding the template: %w", err)
	}
	g := &gatekeeper{client: c}
	if err := g.setLimit(ctx, limitMiB); err != nil {
		return nil, err
	}
	return g, nil
}

func gpuMemTemplate() *templates.ConstraintTemplate {
	ct := &templates.ConstraintTemplate{}
	ct.SetName("k8sgpumemquota")
	ct.Spec.CRD.Spec.Names.Kind = templateKind
	ct.Spec.CRD.Spec.Validation = &templates.Validation{OpenAPIV3Schema: &apiextensions.JSONSchemaProps{
		Type:       "object",
		Properties: map[string]apiextensions.JSONSchemaProps{"limitMiB": {Type: "integer"}},
	}}
	ct.Spec.Targets = []templates.Target{{
		Target: targetName,
		Code: []templates.Code{{Engine: schema.Name, Source: &templates.Anything{
			Value: (&schema.Source{Rego: templateRego, Version: "v1"}).ToUnstructured()}}},
	}}
	return ct
}

// setLimit adds the constraint, or replaces its limit.
func (g *gatekeeper) setLimit(ctx context.Context, limitMiB int64) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": constraints.Group + "/v1beta1",
		"kind":       templateKind,
		"metadata":   map[string]any{"name": "gpumem-limit"},
		"spec": map[string]any{
			"match":      map[string]any{"kinds": []any{map[string]any{"apiGroups": []any{""}, "kinds": []any{"Pod"}}}},
			"parameters": map[string]any{"limitMiB": limitMiB},
		},
	}}
	if _, err := g.client.AddConstraint(ctx, u); err != nil {
		return fmt.Errorf("adding the constraint: %w", err)
	}
	return nil
}

// sync adds pod to the inventory, as Gatekeeper's sync controller does
// (the whole object, unstructured).
func (g *gatekeeper) sync(ctx context.Context, pod *corev1.Pod) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	if _, err := g.client.AddData(ctx, u); err != nil {
		return fmt.Errorf("syncing pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// admissionRequest is the CREATE request for pod, with the pod's JSON as
// the API server sends it.
func admissionRequest(pod *corev1.Pod) (*admissionv1.AdmissionRequest, error) {
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encoding pod %q: %w", pod.Name, err)
	}
	return &admissionv1.AdmissionRequest{
		UID:       "review-" + pod.UID,
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Name:      pod.Name,
		Namespace: pod.Namespace,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}, nil
}

// verdict is one engine's answer: denied with its messages, or allowed.
type verdict struct {
	denied   bool
	messages []string
}

// review evaluates the constraints on req at the webhook's enforcement
// point; any result of a deny constraint denies.
func (g *gatekeeper) review(ctx context.Context, req *admissionv1.AdmissionRequest) (verdict, error) {
	resp, err := g.client.Review(ctx, req, reviews.EnforcementPoint(constraints.WebhookEnforcementPoint))
	if err != nil {
		return verdict{}, fmt.Errorf("review of %q: %w", req.Name, err)
	}
	var v verdict
	for _, r := range resp.Results() {
		if r.EnforcementAction == "" || r.EnforcementAction == "deny" {
			v.denied = true
		}
		v.messages = append(v.messages, r.Msg)
	}
	return v, nil
}
