package matchcond

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// Kind is the kind of webhook configuration a webhook comes from.
type Kind string

// The webhook configuration kinds Load reads.
const (
	Mutating   Kind = "MutatingWebhookConfiguration"
	Validating Kind = "ValidatingWebhookConfiguration"
)

// Matcher holds the compiled matchConditions of every webhook of some
// webhook configurations. It is safe for sequential use; compile it once
// and reuse it.
type Matcher struct {
	webhooks []webhook
}

// webhook is one webhook of a configuration, its conditions compiled.
type webhook struct {
	name    string
	kind    Kind
	matcher matchconditions.Matcher
}

// Result says whether one webhook would be called for a request.
type Result struct {
	// Webhook is the webhook's name, e.g. validate.gpuadmit.io.
	Webhook string
	// Kind is the kind of configuration the webhook belongs to.
	Kind Kind
	// Called is true when the API server would call the webhook.
	Called bool
	// FailedCondition names the matchCondition that evaluated to false
	// when Called is false because of it; it is empty when every condition
	// holds or when an evaluation error was ignored (failurePolicy Ignore).
	FailedCondition string
}

// Load parses the MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations of a (multi-document) YAML or JSON stream,
// ignoring documents of other kinds, and compiles their webhooks'
// matchConditions. It fails when a condition does not compile or when the
// stream holds no webhook.
func Load(configYAML []byte) (*Matcher, error) {
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	m := &Matcher{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(configYAML)))
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("webhook configuration document %d: %w", doc, err)
		}
		hooks, err := parse(data)
		if err != nil {
			return nil, fmt.Errorf("webhook configuration document %d: %w", doc, err)
		}
		for _, h := range hooks {
			w, err := compile(compiler, h)
			if err != nil {
				return nil, fmt.Errorf("%s webhook %q: %w", h.kind, h.name, err)
			}
			m.webhooks = append(m.webhooks, w)
		}
	}
	if len(m.webhooks) == 0 {
		return nil, errors.New("no webhook in the webhook configurations")
	}
	return m, nil
}

// parsedWebhook is what Load needs of one webhook of either kind.
type parsedWebhook struct {
	name          string
	kind          Kind
	conditions    []admissionregistrationv1.MatchCondition
	failurePolicy *admissionregistrationv1.FailurePolicyType
}

// parse reads the webhooks of one document; a document of another kind
// (or an empty one) has none.
func parse(data []byte) ([]parsedWebhook, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, err
	}
	var hooks []parsedWebhook
	switch Kind(meta.Kind) {
	case Mutating:
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", meta.Kind, err)
		}
		for _, h := range cfg.Webhooks {
			if forPods(h.Rules) {
				hooks = append(hooks, parsedWebhook{name: h.Name, kind: Mutating, conditions: h.MatchConditions, failurePolicy: h.FailurePolicy})
			}
		}
	case Validating:
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", meta.Kind, err)
		}
		for _, h := range cfg.Webhooks {
			if forPods(h.Rules) {
				hooks = append(hooks, parsedWebhook{name: h.Name, kind: Validating, conditions: h.MatchConditions, failurePolicy: h.FailurePolicy})
			}
		}
	}
	return hooks, nil
}

// forPods reports whether rules send pod creates to the webhook (a
// configuration without rules is read as one for pods: the matcher is
// about pods only; gpuadmit's ResourceClaim webhook is left out).
func forPods(rules []admissionregistrationv1.RuleWithOperations) bool {
	if len(rules) == 0 {
		return true
	}
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*") {
			if slices.Contains(r.Resources, "pods") || slices.Contains(r.Resources, "*") {
				return true
			}
		}
	}
	return false
}

// compile compiles the matchConditions of one webhook as the API server
// does for a stored configuration, without an authorizer.
func compile(compiler plugincel.ConditionCompiler, h parsedWebhook) (webhook, error) {
	exprs := make([]plugincel.ExpressionAccessor, len(h.conditions))
	for i, c := range h.conditions {
		exprs[i] = &matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression}
	}
	filter := compiler.CompileCondition(exprs, plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: false}, environment.StoredExpressions)
	if errs := filter.CompilationErrors(); len(errs) > 0 {
		return webhook{}, fmt.Errorf("matchConditions: %w", errors.Join(errs...))
	}
	kind := "validating"
	if h.kind == Mutating {
		kind = "admit"
	}
	return webhook{
		name:    h.name,
		kind:    h.kind,
		matcher: matchconditions.NewMatcher(filter, h.failurePolicy, "webhook", kind, h.name),
	}, nil
}

// Match evaluates every webhook's matchConditions for a CREATE of pod in
// the pod's namespace, and says for each, in configuration order, whether
// the API server would call it. It fails when an evaluation error makes the
// API server reject the request (failurePolicy Fail).
func (m *Matcher) Match(ctx context.Context, pod *corev1.Pod) ([]Result, error) {
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	podGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return nil, fmt.Errorf("pod %q: %w", pod.Name, err)
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetGroupVersionKind(podGVK)
	attrs := admission.NewAttributesRecord(obj, nil, podGVK, pod.Namespace, pod.Name, podGVR, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	results := make([]Result, 0, len(m.webhooks))
	for _, w := range m.webhooks {
		versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(obj), VersionedKind: podGVK}
		res := w.matcher.Match(ctx, versioned, nil, nil)
		if res.Error != nil {
			return nil, fmt.Errorf("%s webhook %q: matchConditions: %w", w.kind, w.name, res.Error)
		}
		results = append(results, Result{Webhook: w.name, Kind: w.kind, Called: res.Matches, FailedCondition: res.FailedConditionName})
	}
	return results, nil
}
