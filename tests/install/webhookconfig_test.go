package install_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// TestServerChecksItsWebhookConfigurations: with the shipped webhook
// configurations registered on a real API server (timeoutSeconds 10,
// matchConditions rendered for the default devices, nvidia), a replica
// whose reviewTimeout is 10 s refuses to start, naming both values; one
// governing hygon as well starts (the configurations are not its to
// decide) and reports the three hygon names each pod webhook never sends
// to gpuadmit in gpuadmit_webhook_configuration_mismatches.
func TestServerChecksItsWebhookConfigurations(t *testing.T) {
	c := local.ForTest(t, "../../manifests/webhook", nil)

	o := c.Options()
	o.Config = config.Default()
	o.Config.Admission.ReviewTimeout = &metav1.Duration{Duration: 10 * time.Second}
	err := c.StartWebhook(t.Context(), o)
	if err == nil {
		t.Fatal("a replica whose reviewTimeout equals the webhooks' timeoutSeconds started")
	}
	for _, want := range []string{"admission.reviewTimeout (10s)", "timeoutSeconds (10,", "validate.gpuadmit.io", "mutate.gpuadmit.io"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, err)
		}
	}

	hygon, _, err := config.Parse([]byte("hygon: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	o = c.Options()
	o.Config, o.Registry = hygon, reg
	if err := c.StartWebhook(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"mutate.gpuadmit.io/matchConditions": 3, "validate.gpuadmit.io/matchConditions": 3}
	var got map[string]float64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got = mismatches(t, reg)
		if maps.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("gpuadmit_webhook_configuration_mismatches = %v, want %v", got, want)
	}
}

// mismatches reads gpuadmit_webhook_configuration_mismatches by webhook/check.
func mismatches(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "gpuadmit_webhook_configuration_mismatches" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[label(m, "webhook")+"/"+label(m, "check")] = m.GetGauge().GetValue()
		}
	}
	return got
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
