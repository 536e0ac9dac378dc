// Package webhookmanifests embeds the webhook configurations gpuadmit ships
// (webhooks.yaml: the MutatingWebhookConfiguration and the
// ValidatingWebhookConfiguration), so that tools such as `gpuadmit eval` can
// reason about exactly what the API server is told. kustomization.yaml does
// not list this file; kustomize ignores it.
package webhookmanifests
