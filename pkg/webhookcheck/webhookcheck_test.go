package webhookcheck

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// registered is gpuadmit's pod webhook pair as the chart renders it, its
// matchConditions sending the pods that name one of names and, with
// templates, those naming a ResourceClaimTemplate.
func registered(timeout int32, templates bool, names ...string) []runtime.Object {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	list := "[" + strings.Join(quoted, ", ") + "]"
	cond := []admissionregistrationv1.MatchCondition{{Name: "requests-a-managed-gpu-resource", Expression: `object.spec.containers.exists(c, has(c.resources) && (
		(has(c.resources.limits) && c.resources.limits.exists(k, k in ` + list + `)) ||
		(has(c.resources.requests) && c.resources.requests.exists(k, k in ` + list + `))))`}}
	if templates {
		cond[0].Expression += " || (has(object.spec.resourceClaims) && object.spec.resourceClaims.exists(rc, has(rc.resourceClaimTemplateName)))"
	}
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	fail := admissionregistrationv1.Fail
	return []runtime.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "gpuadmit"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.gpuadmit.io", Rules: rules, MatchConditions: cond,
				FailurePolicy: &fail, TimeoutSeconds: ptr.To(timeout)}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "gpuadmit"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.gpuadmit.io", Rules: rules, MatchConditions: cond,
				FailurePolicy: &fail, TimeoutSeconds: ptr.To(timeout)}}},
	}
}

var (
	nvidiaNames = []string{"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"}
	hygonNames  = []string{"hygon.com/dcunum", "hygon.com/dcumem", "hygon.com/dcucores"}
)

func checkConfig(t *testing.T, doc string) *config.Configuration {
	t.Helper()
	cfg, _, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestWebhookCheckMatchConditions: the server governs hygon while the
// registered matchConditions were rendered for nvidia alone: hygon pods
// never reach gpuadmit, and the check reports each hygon name for both
// webhooks (metric, log); conditions naming every governed name report
// nothing.
func TestWebhookCheckMatchConditions(t *testing.T) {
	hygon := checkConfig(t, "hygon: {}\n")
	noClasses := checkConfig(t, "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndra:\n  deviceClasses: []\n")
	for _, tt := range []struct {
		name       string
		cfg        *config.Configuration
		registered []string
		templates  bool    // the conditions send pods naming a template
		unsent     float64 // per webhook
	}{
		{"hygon governed, nvidia registered", hygon, nvidiaNames, true, 3},
		{"hygon governed and registered", hygon, append(append([]string(nil), nvidiaNames...), hygonNames...), true, 0},
		{"nvidia governed and registered", config.Default(), nvidiaNames, true, 0},
		{"nvidia governed, one name left out", config.Default(), nvidiaNames[1:], true, 1},
		{"DeviceClasses governed, template pods not sent", config.Default(), nvidiaNames, false, 1},
		{"no DeviceClass governed, template pods not sent", noClasses, nvidiaNames, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			c, err := New(fake.NewClientset(registered(10, tt.templates, tt.registered...)...),
				Options{Config: tt.cfg, MutatingWebhook: "gpuadmit", ValidatingWebhook: "gpuadmit", Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.check(context.Background()); err != nil {
				t.Fatalf("check: %v", err)
			}
			if tt.unsent == 0 && testutil.CollectAndCount(c.mismatches) != 0 {
				t.Errorf("a mismatch is reported where every governed name is sent")
			}
			for _, hook := range []string{"mutate.gpuadmit.io", "validate.gpuadmit.io"} {
				if got := gaugeValue(t, c.mismatches, hook, mismatchMatchConditions); got != tt.unsent {
					t.Errorf("%s: %v governed names unsent, want %v", hook, got, tt.unsent)
				}
			}
		})
	}
}

// TestWebhookCheckReviewTimeout: a reviewTimeout not below the registered
// timeoutSeconds refuses the start with an error naming both values and
// the fix; below it starts.
func TestWebhookCheckReviewTimeout(t *testing.T) {
	for _, tt := range []struct {
		review  time.Duration
		timeout int32
		wantErr bool
	}{
		{8 * time.Second, 10, false},
		{9*time.Second + 999*time.Millisecond, 10, false},
		{10 * time.Second, 10, true},
		{8 * time.Second, 5, true},
		{29 * time.Second, 30, false},
	} {
		cfg := config.Default()
		cfg.Admission.ReviewTimeout = &metav1.Duration{Duration: tt.review}
		c, err := New(fake.NewClientset(registered(tt.timeout, true, nvidiaNames...)...),
			Options{Config: cfg, MutatingWebhook: "gpuadmit", ValidatingWebhook: "gpuadmit", Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Start returns after its first check
		err = c.Start(ctx)
		if !tt.wantErr {
			if err != nil {
				t.Errorf("reviewTimeout %s, timeoutSeconds %d: %v", tt.review, tt.timeout, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("reviewTimeout %s, timeoutSeconds %d: started", tt.review, tt.timeout)
			continue
		}
		for _, want := range []string{"admission.reviewTimeout (" + tt.review.String() + ")", "timeoutSeconds (" + itoa(tt.timeout) + ",",
			"validate.gpuadmit.io", "mutate.gpuadmit.io", "webhook.timeoutSeconds"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %q: %v", want, err)
			}
		}
		if got := gaugeValue(t, c.mismatches, "validate.gpuadmit.io", mismatchTimeoutSeconds); got != 1 {
			t.Errorf("timeoutSeconds mismatch metric %v, want 1", got)
		}
	}
}

// TestWebhookCheckTimeoutLoweredLater attacks a running replica: the
// validating webhook's timeoutSeconds is lowered under reviewTimeout after
// the start, which a review would then outlive. The next check, a
// webhookCheckEvery later on the check's clock, reports it; before that
// step nothing is read again.
func TestWebhookCheckTimeoutLoweredLater(t *testing.T) {
	kube := fake.NewClientset(registered(10, true, nvidiaNames...)...)
	clk := clocktesting.NewFakeClock(time.Now())
	c, err := New(kube, Options{Config: config.Default(), MutatingWebhook: "gpuadmit", ValidatingWebhook: "gpuadmit",
		Registry: prometheus.NewRegistry(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	waitFor(t, "the first check, then the ticker", clk.HasWaiters)
	if n := testutil.CollectAndCount(c.mismatches); n != 0 {
		t.Fatalf("%d mismatch series at start, want none", n)
	}
	val, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	val.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, val, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(webhookCheckEvery)
	waitFor(t, "the lowered timeoutSeconds reported", func() bool {
		return testutil.CollectAndCount(c.mismatches) == 1 && gaugeValue(t, c.mismatches, "validate.gpuadmit.io", mismatchTimeoutSeconds) == 1
	})
}

// waitFor waits until cond holds (what another goroutine does: no clock
// is stepped here), failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestWebhookCheckNothingRegistered: without gpuadmit's configurations
// (not installed yet) the check neither refuses nor reports.
func TestWebhookCheckNothingRegistered(t *testing.T) {
	cfg := config.Default()
	cfg.Admission.ReviewTimeout = &metav1.Duration{Duration: time.Minute}
	c, err := New(fake.NewClientset(), Options{Config: cfg, MutatingWebhook: "gpuadmit", ValidatingWebhook: "gpuadmit",
		Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.check(context.Background()); err != nil || testutil.CollectAndCount(c.mismatches) != 0 {
		t.Errorf("check without configurations: %v, %d series", err, testutil.CollectAndCount(c.mismatches))
	}
}

func gaugeValue(t *testing.T, g *prometheus.GaugeVec, labels ...string) float64 {
	t.Helper()
	m, err := g.GetMetricWithLabelValues(labels...)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.ToFloat64(m)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
