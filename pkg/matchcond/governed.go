package matchcond

import (
	"context"
	"errors"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// FromConfigurations compiles the matchConditions of the pod webhooks of
// registered webhook configurations (as read from the API server). It
// fails when a condition does not compile or when none of the
// configurations has a webhook for pods.
func FromConfigurations(mutating []admissionregistrationv1.MutatingWebhookConfiguration,
	validating []admissionregistrationv1.ValidatingWebhookConfiguration) (*Matcher, error) {
	var hooks []parsedWebhook
	for _, c := range mutating {
		for _, h := range c.Webhooks {
			if forPods(h.Rules) {
				hooks = append(hooks, parsedWebhook{name: h.Name, kind: Mutating, conditions: h.MatchConditions, failurePolicy: h.FailurePolicy})
			}
		}
	}
	for _, c := range validating {
		for _, h := range c.Webhooks {
			if forPods(h.Rules) {
				hooks = append(hooks, parsedWebhook{name: h.Name, kind: Validating, conditions: h.MatchConditions, failurePolicy: h.FailurePolicy})
			}
		}
	}
	if len(hooks) == 0 {
		return nil, errors.New("no webhook for pods in the webhook configurations")
	}
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	m := &Matcher{}
	for _, h := range hooks {
		w, err := compile(compiler, h)
		if err != nil {
			return nil, fmt.Errorf("%s webhook %q: %w", h.kind, h.name, err)
		}
		m.webhooks = append(m.webhooks, w)
	}
	return m, nil
}

// Gap is a webhook that a CREATE of a pod asking for a governed resource
// would not reach: the resource names its matchConditions leave out.
type Gap struct {
	Webhook string
	Kind    Kind
	Names   []corev1.ResourceName
	// Errors holds the evaluation errors that would make the API server
	// refuse such a pod (failurePolicy Fail), by resource name.
	Errors map[corev1.ResourceName]error
}

// Unsent evaluates, for each governed resource name, the matchConditions
// of every webhook against a pod whose one container asks for that
// resource alone (a limit of 1, in limits and requests), and returns the
// webhooks that pod would not reach, with the names each leaves out, in
// configuration order; nil when every webhook sees every name. It tells
// when the conditions, rendered once at installation, no longer cover the
// families the server governs (a family added to the configuration later
// would otherwise never be sent to gpuadmit, and never be counted).
func (m *Matcher) Unsent(ctx context.Context, names []corev1.ResourceName) []Gap {
	probes := make([]*corev1.Pod, len(names))
	for i, name := range names {
		probes[i] = probePod(name)
	}
	return m.unsent(ctx, names, probes)
}

// TemplateProbe is the name Unsent's gaps give a pod that names a
// ResourceClaimTemplate (UnsentTemplatePods).
const TemplateProbe corev1.ResourceName = "(a pod naming a ResourceClaimTemplate)"

// UnsentTemplatePods says which webhooks a pod that asks for no extended
// resource but names a ResourceClaimTemplate would not reach: with governed
// DeviceClasses its templates' claims are part of its demand, so it must
// reach gpuadmit.
func (m *Matcher) UnsentTemplatePods(ctx context.Context) []Gap {
	p := probePod("")
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptrTo("gpu")}}
	return m.unsent(ctx, []corev1.ResourceName{TemplateProbe}, []*corev1.Pod{p})
}

func ptrTo[T any](v T) *T { return &v }

// unsent evaluates every webhook for each probe pod, named by names.
func (m *Matcher) unsent(ctx context.Context, names []corev1.ResourceName, probes []*corev1.Pod) []Gap {
	gaps := make([]Gap, len(m.webhooks))
	for i, w := range m.webhooks {
		gaps[i] = Gap{Webhook: w.name, Kind: w.kind}
	}
	for j, pod := range probes {
		name := names[j]
		for i, w := range m.webhooks {
			called, err := w.calls(ctx, pod)
			switch {
			case err != nil:
				if gaps[i].Errors == nil {
					gaps[i].Errors = map[corev1.ResourceName]error{}
				}
				gaps[i].Errors[name] = err
			case !called:
				gaps[i].Names = append(gaps[i].Names, name)
			}
		}
	}
	gaps = slices.DeleteFunc(gaps, func(g Gap) bool { return len(g.Names) == 0 && len(g.Errors) == 0 })
	if len(gaps) == 0 {
		return nil
	}
	return gaps
}

// calls evaluates one webhook's conditions for a CREATE of pod.
func (w webhook) calls(ctx context.Context, pod *corev1.Pod) (bool, error) {
	one := Matcher{webhooks: []webhook{w}}
	res, err := one.Match(ctx, pod)
	if err != nil {
		return false, err
	}
	return res[0].Called, nil
}

// probePod is the smallest pod that asks for name.
func probePod(name corev1.ResourceName) *corev1.Pod {
	q := corev1.ResourceList{name: resource.MustParse("1")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuadmit-matchconditions-probe", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe",
			Resources: corev1.ResourceRequirements{Limits: q, Requests: q}}}},
	}
}
