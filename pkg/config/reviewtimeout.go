package config

import (
	"fmt"
	"time"
)

// WebhookTimeout is how long the API server waits for one of gpuadmit's
// registered webhooks: its configuration's name, the webhook's name and its
// timeoutSeconds (10 when the configuration leaves it out, the API
// server's default).
type WebhookTimeout struct {
	Configuration string
	Webhook       string
	Seconds       int32
}

// ValidateReviewTimeout refuses a configuration whose
// admission.reviewTimeout is not below the timeoutSeconds of every webhook
// the API server calls gpuadmit through. A review's handler may run for
// reviewTimeout: with a longer one the API server gives up first, and then
// (failurePolicy Fail) refuses the pod, or (Ignore) admits it unchecked,
// while the handler may still reserve quota for a create that never
// happens. The error names both values and the two ways to fix it.
func ValidateReviewTimeout(c *Configuration, hooks []WebhookTimeout) error {
	review := c.Admission.ReviewTimeout.Duration
	for _, h := range hooks {
		limit := time.Duration(h.Seconds) * time.Second
		if review < limit {
			continue
		}
		return fmt.Errorf("admission.reviewTimeout (%s) is not below the timeoutSeconds (%d, i.e. %s) of webhook %q of %q: "+
			"the API server would stop waiting before gpuadmit's answer; lower admission.reviewTimeout below %s "+
			"(the chart's config.admission.reviewTimeout) or raise the webhook's timeoutSeconds above %s, at most 30 "+
			"(the chart's webhook.timeoutSeconds)",
			review, h.Seconds, limit, h.Webhook, h.Configuration, limit, review.Truncate(time.Second))
	}
	return nil
}
