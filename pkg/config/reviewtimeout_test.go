package config_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// TestValidateReviewTimeout: a reviewTimeout equal to or above any
// registered webhook's timeoutSeconds is refused, the error naming both
// values, the webhook and both keys to change; strictly below passes.
func TestValidateReviewTimeout(t *testing.T) {
	hooks := func(s ...int32) []config.WebhookTimeout {
		var out []config.WebhookTimeout
		for _, n := range s {
			out = append(out, config.WebhookTimeout{Configuration: "ValidatingWebhookConfiguration gpuadmit", Webhook: "validate.gpuadmit.io", Seconds: n})
		}
		return out
	}
	for _, tt := range []struct {
		review time.Duration
		hooks  []config.WebhookTimeout
		ok     bool
	}{
		{8 * time.Second, hooks(10), true},
		{8 * time.Second, nil, true},
		{10 * time.Second, hooks(10), false},
		{12 * time.Second, hooks(10), false},
		{8 * time.Second, hooks(30, 8), false}, // one webhook of two
		{500 * time.Millisecond, hooks(1), true},
	} {
		cfg := config.Default()
		cfg.Admission.ReviewTimeout = &metav1.Duration{Duration: tt.review}
		err := config.ValidateReviewTimeout(cfg, tt.hooks)
		if tt.ok != (err == nil) {
			t.Errorf("reviewTimeout %s, %+v: error %v", tt.review, tt.hooks, err)
			continue
		}
		if err == nil {
			continue
		}
		for _, want := range []string{"admission.reviewTimeout (" + tt.review.String() + ")", "timeoutSeconds (", "validate.gpuadmit.io",
			"config.admission.reviewTimeout", "webhook.timeoutSeconds"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %q: %v", want, err)
			}
		}
	}
}
