package matchcond_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webhookmanifests "github.com/gpuadmit/gpuadmit/manifests/webhook"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
)

func pod(init, app []corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a"},
		Spec:       corev1.PodSpec{InitContainers: init, Containers: app},
	}
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func list(name string, q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceName(name): resource.MustParse(q)}
}

// TestShippedConfiguration evaluates manifests/webhook/webhooks.yaml.
func TestShippedConfiguration(t *testing.T) {
	m, err := matchcond.Load(webhookmanifests.WebhooksYAML())
	if err != nil {
		t.Fatal(err)
	}
	both := []string{"mutate.gpuadmit.io", "validate.gpuadmit.io"}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string // webhooks called
		err  string   // error substring
	}{
		{"GPU in limits", pod(nil, []corev1.Container{container("app", nil, list("nvidia.com/gpu", "1"))}), both, ""},
		{"gpumem in requests", pod(nil, []corev1.Container{container("app", list("nvidia.com/gpumem", "1024"), nil)}), both, ""},
		{"gpucores in a second container", pod(nil, []corev1.Container{
			container("web", list("cpu", "1"), list("cpu", "1")),
			container("app", nil, list("nvidia.com/gpucores", "50")),
		}), both, ""},
		{"GPU only in an init container", pod(
			[]corev1.Container{container("convert", nil, list("nvidia.com/gpumem-percentage", "50"))},
			[]corev1.Container{container("app", list("cpu", "1"), nil)}), both, ""},
		{"non-GPU pod", pod(
			[]corev1.Container{container("init", list("memory", "1Gi"), list("memory", "1Gi"))},
			[]corev1.Container{container("app", list("cpu", "1"), list("cpu", "1"))}), nil, ""},
		{"another vendor's GPU", pod(nil, []corev1.Container{container("app", nil, list("amd.com/gpu", "1"))}), nil, ""},
		{"no resources at all", pod(nil, []corev1.Container{{Name: "app"}}), nil, ""},
		// Invalid, but mutating webhooks run before validation: the first
		// webhook's condition fails on the null list, failurePolicy Fail.
		{"no containers at all", pod(nil, nil), nil,
			`MutatingWebhookConfiguration webhook "mutate.gpuadmit.io": matchConditions: expression '[object.spec.containers, `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			consulted, called, err := m.Consulted(context.Background(), tt.pod)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Consulted error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if consulted != (len(tt.want) > 0) || !slices.Equal(called, tt.want) {
				t.Errorf("Consulted = %v, %q; want %q", consulted, called, tt.want)
			}
			results, err := m.Match(context.Background(), tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				wantFailed := ""
				if len(tt.want) == 0 {
					wantFailed = "requests-a-managed-gpu-resource"
				}
				if r.FailedCondition != wantFailed {
					t.Errorf("%s %s: FailedCondition = %q, want %q", r.Kind, r.Webhook, r.FailedCondition, wantFailed)
				}
			}
		})
	}
}

// config is a ValidatingWebhookConfiguration with one webhook and one
// condition.
func config(failurePolicy, expression string) []byte {
	return []byte(`# a comment-only document
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ignored}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: x}
webhooks:
  - name: x.example.com
    admissionReviewVersions: ["v1"]
    sideEffects: None
    clientConfig: {url: "https://x.example.com"}
    failurePolicy: ` + failurePolicy + `
    matchConditions:
      - name: cond
        expression: "` + expression + `"
`)
}

func TestConditions(t *testing.T) {
	gpuPod := pod(nil, []corev1.Container{container("app", nil, list("nvidia.com/gpu", "1"))})
	tests := []struct {
		name       string
		config     []byte
		wantLoad   string // error substring from Load
		want       matchcond.Result
		wantMatch  string // error substring from Match
		wantCalled bool
	}{
		{name: "request variables", config: config("Fail", "request.operation == 'CREATE' && request.namespace == 'team-a' && object.metadata.name == 'p'"),
			want: matchcond.Result{Webhook: "x.example.com", Kind: matchcond.Validating, Called: true}},
		{name: "false condition", config: config("Fail", "object.metadata.name == 'q'"),
			want: matchcond.Result{Webhook: "x.example.com", Kind: matchcond.Validating, FailedCondition: "cond"}},
		{name: "evaluation error, failurePolicy Ignore: not called", config: config("Ignore", "object.spec.nodeName == 'n'"),
			want: matchcond.Result{Webhook: "x.example.com", Kind: matchcond.Validating}},
		{name: "evaluation error, failurePolicy Fail: rejected", config: config("Fail", "object.spec.nodeName == 'n'"),
			wantMatch: `ValidatingWebhookConfiguration webhook "x.example.com": matchConditions: expression 'object.spec.nodeName == 'n'' resulted in error: no such key: nodeName`},
		{name: "broken expression", config: config("Fail", "object.spec.containers.exists(c,"),
			wantLoad: `ValidatingWebhookConfiguration webhook "x.example.com": matchConditions: compilation failed: ERROR: <input>:1:33: Syntax error: mismatched input '<EOF>'`},
		{name: "not a boolean", config: config("Fail", "1 + 1"),
			wantLoad: "must evaluate to bool but got int"},
		{name: "authorizer is not declared", config: config("Fail", "authorizer.group('').resource('pods').check('get').allowed()"),
			wantLoad: "undeclared reference to 'authorizer'"},
		{name: "unknown field", config: []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nwebhooks: [{name: x, matchConditionz: []}]\n"),
			wantLoad: `document 1: MutatingWebhookConfiguration: error unmarshaling JSON: while decoding JSON: json: unknown field "matchConditionz"`},
		{name: "no webhook", config: []byte("apiVersion: v1\nkind: ConfigMap\n"), wantLoad: "no webhook in the webhook configurations"},
		{name: "not YAML", config: []byte("kind: [\n"), wantLoad: "document 1: error converting YAML to JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := matchcond.Load(tt.config)
			if tt.wantLoad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantLoad) {
					t.Fatalf("Load error = %v, want %q", err, tt.wantLoad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			results, err := m.Match(context.Background(), gpuPod)
			if tt.wantMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantMatch) {
					t.Fatalf("Match error = %v, want %q", err, tt.wantMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 1 || results[0] != tt.want {
				t.Errorf("Match = %+v, want [%+v]", results, tt.want)
			}
		})
	}
}
