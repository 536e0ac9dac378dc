package matchcond_test

import (
	"context"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	webhookmanifests "github.com/gpuadmit/gpuadmit/manifests/webhook"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
)

// TestUnsentShipped: the shipped webhook configurations send every name
// of the default configuration (nvidia's) to both pod webhooks, and leave
// out a family they were not rendered for (hygon): each pod webhook is a
// gap naming exactly the hygon names.
func TestUnsentShipped(t *testing.T) {
	m, err := matchcond.Load(webhookmanifests.WebhooksYAML())
	if err != nil {
		t.Fatal(err)
	}
	nvidia := []corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"}
	if gaps := m.Unsent(context.Background(), nvidia); gaps != nil {
		t.Errorf("the shipped conditions leave governed nvidia names out: %+v", gaps)
	}
	hygon := []corev1.ResourceName{"hygon.com/dcunum", "hygon.com/dcumem"}
	gaps := m.Unsent(context.Background(), append(nvidia, hygon...))
	if len(gaps) != 2 {
		t.Fatalf("gaps %+v, want the mutating and the validating pod webhooks", gaps)
	}
	for _, g := range gaps {
		if !slices.Equal(g.Names, hygon) || len(g.Errors) != 0 {
			t.Errorf("%s: unsent %v (errors %v), want %v", g.Webhook, g.Names, g.Errors, hygon)
		}
	}
}

// TestFromConfigurationsNoPodWebhook: configurations without a pod
// webhook (only gpuadmit's ResourceClaim webhook) cannot be compared.
func TestFromConfigurationsNoPodWebhook(t *testing.T) {
	claims := admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate-resourceclaims.gpuadmit.io",
		Rules: []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}}}}}}}
	if _, err := matchcond.FromConfigurations(nil, []admissionregistrationv1.ValidatingWebhookConfiguration{claims}); err == nil {
		t.Error("no error for configurations without a pod webhook")
	}
}

// TestUnsentTemplatePods: the shipped configurations (rendered with
// governed DeviceClasses) send a pod that only names a
// ResourceClaimTemplate to both pod webhooks; conditions on extended
// resources alone leave it out, a gap naming TemplateProbe.
func TestUnsentTemplatePods(t *testing.T) {
	m, err := matchcond.Load(webhookmanifests.WebhooksYAML())
	if err != nil {
		t.Fatal(err)
	}
	if gaps := m.UnsentTemplatePods(context.Background()); gaps != nil {
		t.Errorf("shipped conditions leave template pods out: %+v", gaps)
	}
	rules := []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, Resources: []string{"pods"}}}}
	resourcesOnly := admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.gpuadmit.io",
		Rules: rules, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "resources",
			Expression: "object.spec.containers.exists(c, has(c.resources) && has(c.resources.limits) && c.resources.limits.exists(k, k in ['nvidia.com/gpu']))"}}}}}
	m, err = matchcond.FromConfigurations(nil, []admissionregistrationv1.ValidatingWebhookConfiguration{resourcesOnly})
	if err != nil {
		t.Fatal(err)
	}
	gaps := m.UnsentTemplatePods(context.Background())
	if len(gaps) != 1 || !slices.Equal(gaps[0].Names, []corev1.ResourceName{matchcond.TemplateProbe}) {
		t.Errorf("conditions on resources alone: gaps %+v, want the webhook leaving template pods out", gaps)
	}
}
