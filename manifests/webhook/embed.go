// Package webhookmanifests embeds the webhook configurations gpuadmit ships
// (webhooks.yaml: the MutatingWebhookConfiguration and the
// ValidatingWebhookConfiguration), so that tools such as `gpuadmit eval` can
// reason about exactly what the API server is told. kustomization.yaml does
// not list this file; kustomize ignores it.
package webhookmanifests

import (
	_ "embed" // for go:embed
	"slices"
)

//go:embed webhooks.yaml
var webhooksYAML []byte

// WebhooksYAML returns a copy of manifests/webhook/webhooks.yaml: both
// webhook configurations in one multi-document YAML.
func WebhooksYAML() []byte {
	return slices.Clone(webhooksYAML)
}
