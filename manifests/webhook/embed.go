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
