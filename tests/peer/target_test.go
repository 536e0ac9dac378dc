package peer

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/open-policy-agent/frameworks/constraint/pkg/core/constraints"
	"github.com/open-policy-agent/frameworks/constraint/pkg/handler"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// targetName is Gatekeeper's admission target.
const targetName = "admission.k8s.gatekeeper.sh"

// podTarget stands in for Gatekeeper's K8sValidationTarget: objects are
// stored in the inventory under namespace/<ns>/<group-version>/<kind>/<name>
// (cluster/... without a namespace) and an AdmissionRequest is the review.
// Matching is by kind only (spec.match.kinds).
type podTarget struct{}

var _ handler.TargetHandler = podTarget{}

func (podTarget) GetName() string { return targetName }

func (podTarget) ProcessData(obj any) (bool, []string, any, error) {
	o, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false, nil, nil, nil
	}
	gvk := o.GroupVersionKind()
	if gvk.Version == "" || gvk.Kind == "" {
		return true, nil, nil, fmt.Errorf("object %q has no apiVersion or kind", o.GetName())
	}
	gv := url.PathEscape(gvk.GroupVersion().String())
	if o.GetNamespace() == "" {
		return true, []string{"cluster", gv, gvk.Kind, o.GetName()}, o.Object, nil
	}
	return true, []string{"namespace", o.GetNamespace(), gv, gvk.Kind, o.GetName()}, o.Object, nil
}

// review is what the rego driver sees as input.review: the admission
// request's fields (the object as raw JSON, decoded by the driver).
type review struct {
	admissionv1.AdmissionRequest
}

// GetAdmissionRequest lets the client match the template's operations,
// as for Gatekeeper's review.
func (r *review) GetAdmissionRequest() *admissionv1.AdmissionRequest { return &r.AdmissionRequest }

func (podTarget) HandleReview(obj any) (bool, any, error) {
	switch r := obj.(type) {
	case *admissionv1.AdmissionRequest:
		return true, &review{AdmissionRequest: *r}, nil
	default:
		return false, nil, nil
	}
}

func (podTarget) MatchSchema() apiextensions.JSONSchemaProps {
	strings := &apiextensions.JSONSchemaPropsOrArray{Schema: &apiextensions.JSONSchemaProps{Type: "string"}}
	return apiextensions.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensions.JSONSchemaProps{
			"kinds": {Type: "array", Items: &apiextensions.JSONSchemaPropsOrArray{Schema: &apiextensions.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensions.JSONSchemaProps{
					"apiGroups": {Type: "array", Items: strings},
					"kinds":     {Type: "array", Items: strings},
				},
			}}},
		},
	}
}

func (podTarget) ValidateConstraint(*unstructured.Unstructured) error { return nil }

func (podTarget) ToMatcher(c *unstructured.Unstructured) (constraints.Matcher, error) {
	list, _, err := unstructured.NestedSlice(c.Object, "spec", "match", "kinds")
	if err != nil {
		return nil, fmt.Errorf("spec.match.kinds: %w", err)
	}
	if len(list) == 0 { // Gatekeeper's would match every kind
		return nil, errors.New("constraint has no spec.match.kinds")
	}
	m := kindMatcher{}
	for _, item := range list {
		entry, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.match.kinds: entry %v is not an object", item)
		}
		groups, _, err := unstructured.NestedStringSlice(entry, "apiGroups")
		if err != nil {
			return nil, fmt.Errorf("spec.match.kinds.apiGroups: %w", err)
		}
		kinds, _, err := unstructured.NestedStringSlice(entry, "kinds")
		if err != nil {
			return nil, fmt.Errorf("spec.match.kinds.kinds: %w", err)
		}
		for _, g := range groups {
			for _, k := range kinds {
				m[[2]string{g, k}] = true
			}
		}
	}
	return m, nil
}

// kindMatcher matches reviews of the listed (group, kind) pairs; "*"
// matches any group or kind.
type kindMatcher map[[2]string]bool

func (m kindMatcher) Match(r any) (bool, error) {
	rv, ok := r.(*review)
	if !ok {
		return false, fmt.Errorf("unexpected review %T", r)
	}
	g, k := rv.Kind.Group, rv.Kind.Kind
	return m[[2]string{g, k}] || m[[2]string{"*", k}] || m[[2]string{g, "*"}] || m[[2]string{"*", "*"}], nil
}
