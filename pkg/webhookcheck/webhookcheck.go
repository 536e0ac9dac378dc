package webhookcheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
)

// Check compares the server's live configuration with gpuadmit's
// registered webhook configurations, which the chart renders once from its
// values: at start, a reviewTimeout not below a webhook's timeoutSeconds
// refuses the start (config.ValidateReviewTimeout); at start and every
// checkEvery after, a governed resource name that the webhooks'
// matchConditions do not send to gpuadmit (a family added to the
// configuration, not to the webhooks) is reported in the log and in
// gpuadmit_webhook_configuration_mismatches, as is a timeoutSeconds
// lowered under reviewTimeout later. A configuration that is not there
// (yet) is logged, not an error.
type Check struct {
	kube                 kubernetes.Interface
	cfg                  *config.Configuration
	mutating, validating string
	names                []corev1.ResourceName
	// templates: DeviceClasses are governed, so pods naming a
	// ResourceClaimTemplate must reach the webhooks too.
	templates  bool
	mismatches *prometheus.GaugeVec
	clock      clock.WithTicker
	log        logr.Logger
}

// webhookCheckEvery is how often the registered configurations are
// compared again.
const webhookCheckEvery = time.Minute

// Mismatch kinds (the check label).
const (
	mismatchMatchConditions = "matchConditions"
	mismatchTimeoutSeconds  = "timeoutSeconds"
)

// Options are what a Check is handed.
type Options struct {
	// Config is the server's configuration, defaulted.
	Config *config.Configuration
	// MutatingWebhook and ValidatingWebhook name gpuadmit's webhook
	// configurations ("": not checked).
	MutatingWebhook, ValidatingWebhook string
	// Registry receives gpuadmit_webhook_configuration_mismatches.
	Registry prometheus.Registerer
	// Clock times the checks after the first (default the wall clock).
	Clock clock.WithTicker
	Log   logr.Logger
}

// New builds the Check of opts, reading the configurations through kube.
func New(kube kubernetes.Interface, opts Options) (*Check, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuadmit_webhook_configuration_mismatches",
		Help: "Per gpuadmit webhook: governed resource names its matchConditions do not send to gpuadmit (check=matchConditions), " +
			"1 when its timeoutSeconds is not above admission.reviewTimeout (check=timeoutSeconds)."}, []string{"webhook", "check"})
	if err := opts.Registry.Register(g); err != nil {
		return nil, fmt.Errorf("registering the webhook configuration metric: %w", err)
	}
	return &Check{kube: kube, cfg: opts.Config, mutating: opts.MutatingWebhook, validating: opts.ValidatingWebhook,
		names: governedNames(config.Families(opts.Config)), templates: len(config.DeviceClasses(opts.Config)) > 0,
		mismatches: g, clock: opts.Clock, log: opts.Log}, nil
}

// governedNames lists every resource name of the governed families.
func governedNames(fams []effective.Family) []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, f := range fams {
		for _, n := range []corev1.ResourceName{f.Names.Count, f.Names.Memory, f.Names.MemoryPercentage, f.Names.Cores} {
			if n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// Start checks once, refusing the start on an inconsistent reviewTimeout,
// then again every webhookCheckEvery until ctx ends.
func (c *Check) Start(ctx context.Context) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	tick := c.clock.NewTicker(webhookCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
			if err := c.check(ctx); err != nil {
				c.log.Error(err, "gpuadmit's webhook configuration changed under the running configuration")
			}
		}
	}
}

// check compares once; it returns the reviewTimeout error only.
func (c *Check) check(ctx context.Context) error {
	mut, val, err := c.read(ctx)
	if err != nil {
		c.log.Error(err, "reading gpuadmit's webhook configurations; their timeoutSeconds and matchConditions are not checked")
		return nil
	}
	c.mismatches.Reset()
	timeoutErr := c.checkTimeouts(mut, val)
	if len(mut)+len(val) > 0 {
		c.checkConditions(ctx, mut, val)
	}
	return timeoutErr
}

// read gets gpuadmit's own configurations; one that does not exist is left
// out (nothing registered yet, or registered under another name).
func (c *Check) read(ctx context.Context) ([]admissionregistrationv1.MutatingWebhookConfiguration,
	[]admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	adm := c.kube.AdmissionregistrationV1()
	var mut []admissionregistrationv1.MutatingWebhookConfiguration
	var val []admissionregistrationv1.ValidatingWebhookConfiguration
	if c.mutating != "" {
		m, err := adm.MutatingWebhookConfigurations().Get(ctx, c.mutating, metav1.GetOptions{})
		switch {
		case err == nil:
			mut = append(mut, *m)
		case apierrors.IsNotFound(err):
			c.log.Info("no MutatingWebhookConfiguration of this name: nothing to compare", "name", c.mutating)
		default:
			return nil, nil, fmt.Errorf("MutatingWebhookConfiguration %s: %w", c.mutating, err)
		}
	}
	if c.validating != "" {
		v, err := adm.ValidatingWebhookConfigurations().Get(ctx, c.validating, metav1.GetOptions{})
		switch {
		case err == nil:
			val = append(val, *v)
		case apierrors.IsNotFound(err):
			c.log.Info("no ValidatingWebhookConfiguration of this name: nothing to compare", "name", c.validating)
		default:
			return nil, nil, fmt.Errorf("ValidatingWebhookConfiguration %s: %w", c.validating, err)
		}
	}
	return mut, val, nil
}

// checkTimeouts validates reviewTimeout against every webhook's
// timeoutSeconds, marking each webhook it is not below.
func (c *Check) checkTimeouts(mut []admissionregistrationv1.MutatingWebhookConfiguration,
	val []admissionregistrationv1.ValidatingWebhookConfiguration) error {
	var hooks []config.WebhookTimeout
	timeout := func(cfg string, name string, s *int32) {
		hooks = append(hooks, config.WebhookTimeout{Configuration: cfg, Webhook: name, Seconds: ptrOr(s, defaultTimeoutSeconds)})
	}
	for _, m := range mut {
		for _, h := range m.Webhooks {
			timeout("MutatingWebhookConfiguration "+m.Name, h.Name, h.TimeoutSeconds)
		}
	}
	for _, v := range val {
		for _, h := range v.Webhooks {
			timeout("ValidatingWebhookConfiguration "+v.Name, h.Name, h.TimeoutSeconds)
		}
	}
	var errs []error
	for _, h := range hooks {
		if err := config.ValidateReviewTimeout(c.cfg, []config.WebhookTimeout{h}); err != nil {
			c.mismatches.WithLabelValues(h.Webhook, mismatchTimeoutSeconds).Set(1)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// defaultTimeoutSeconds is the API server's timeoutSeconds when a webhook
// leaves it out.
const defaultTimeoutSeconds = 10

func ptrOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

// checkConditions reports each webhook whose matchConditions leave a
// governed resource name out (or, with governed DeviceClasses, pods naming
// a ResourceClaimTemplate).
func (c *Check) checkConditions(ctx context.Context, mut []admissionregistrationv1.MutatingWebhookConfiguration,
	val []admissionregistrationv1.ValidatingWebhookConfiguration) {
	m, err := matchcond.FromConfigurations(mut, val)
	if err != nil {
		c.log.Error(err, "gpuadmit's webhook configurations' matchConditions cannot be compared with the governed resources")
		return
	}
	gaps := m.Unsent(ctx, c.names)
	if c.templates {
		gaps = append(gaps, m.UnsentTemplatePods(ctx)...)
	}
	for _, g := range gaps {
		c.mismatches.WithLabelValues(g.Webhook, mismatchMatchConditions).Add(float64(len(g.Names) + len(g.Errors)))
		names := make([]string, 0, len(g.Names)+len(g.Errors))
		for _, n := range g.Names {
			names = append(names, string(n))
		}
		for n := range g.Errors {
			names = append(names, string(n))
		}
		slices.Sort(names)
		c.log.Error(nil, "the matchConditions of a gpuadmit webhook do not send pods asking for governed resources: such pods are "+
			"neither checked nor counted; render the webhook configurations again from the same devices configuration "+
			"(helm upgrade with the values the server's configuration comes from)",
			"webhook", g.Webhook, "kind", string(g.Kind), "resources", strings.Join(names, ", "))
	}
}
