// Package server wires gpuadmit's admission webhook: a controller-runtime
// manager with a TLS webhook server (/mutate-pods, /validate-pods), the
// usage ledger fed by informers, the policy engine with ConfigMap hot
// reload, the shared decision function, certificate rotation, health and
// readiness probes and Prometheus metrics. cmd/webhook, the demo and the
// integration suites all run exactly this wiring.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
	"github.com/gpuadmit/gpuadmit/pkg/cache"
	"github.com/gpuadmit/gpuadmit/pkg/certs"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/policy"
)

// Webhook paths.
const (
	MutatePath   = "/mutate-pods"
	ValidatePath = "/validate-pods"
)

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	Settings effective.Settings
	// Namespace is the server's own namespace: policy ConfigMaps and the
	// certificate Secret live there.
	Namespace string
	// PolicyDir adds the policies of a directory to the built-in ones.
	PolicyDir string
	// PolicySelector selects policy ConfigMaps in Namespace ("" disables).
	PolicySelector string
	// ReservationTTL bounds how long an admitted pod's demand is reserved
	// before the watch sees the pod (default 30s).
	ReservationTTL time.Duration
	// Host and Port of the webhook server (default :9443).
	Host string
	Port int
	// MetricsAddr and ProbeAddr ("0" disables; defaults :8080 and :8081).
	MetricsAddr, ProbeAddr string
	// Registry receives gpuadmit's collectors (controller-runtime's
	// metrics.Registry in production; a fresh one in tests).
	Registry prometheus.Registerer
	// CertDir, when set, serves tls.crt/tls.key from that directory
	// (cert-manager); otherwise the server manages its own CA in CertSecret
	// and patches the caBundle of MutatingWebhook and ValidatingWebhook.
	CertDir           string
	CertSecret        string
	CertDNSNames      []string
	CertIPs           []net.IP
	MutatingWebhook   string
	ValidatingWebhook string
	// ShutdownTimeout bounds graceful shutdown (default 10s).
	ShutdownTimeout time.Duration
	Log             logr.Logger
}

// Server is the wired admission webhook.
type Server struct {
	mgr     manager.Manager
	Ledger  *cache.Ledger
	Engine  *policy.Engine
	feed    *cache.Feed
	rotator *certs.Rotator
	opts    Options
}

// New wires a server against the API server of cfg. Nothing runs until Start.
func New(cfg *rest.Config, opts Options) (*Server, error) {
	opts = withDefaults(opts)
	if err := opts.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	s := &Server{opts: opts}
	if opts.CertDir == "" {
		s.rotator = certs.NewRotator(kube, certs.Options{
			Namespace: opts.Namespace, SecretName: opts.CertSecret, DNSNames: opts.CertDNSNames, IPs: opts.CertIPs,
			MutatingWebhooks: nonEmpty(opts.MutatingWebhook), ValidatingWebhooks: nonEmpty(opts.ValidatingWebhook),
			Log: opts.Log.WithName("certs"),
		})
	}
	tlsOpts := func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		if s.rotator != nil {
			c.GetCertificate = s.rotator.GetCertificate
		}
	}
	s.mgr, err = ctrl.NewManager(cfg, manager.Options{
		Logger:                  opts.Log,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.ProbeAddr,
		GracefulShutdownTimeout: &opts.ShutdownTimeout,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir, TLSOpts: []func(*tls.Config){tlsOpts},
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	s.Ledger = cache.New(cache.Options{Settings: opts.Settings, Log: opts.Log.WithName("ledger")})
	if s.feed, err = cache.NewFeed(kube, s.Ledger, cache.FeedOptions{Log: opts.Log.WithName("feed")}); err != nil {
		return nil, fmt.Errorf("informers: %w", err)
	}
	s.Engine = policy.New(policy.Options{Log: opts.Log.WithName("policy")})
	if err := s.wire(kube); err != nil {
		return nil, err
	}
	return s, nil
}

func withDefaults(o Options) Options {
	if o.ReservationTTL <= 0 {
		o.ReservationTTL = 30 * time.Second
	}
	if o.Port == 0 {
		o.Port = 9443
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8080"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = ":8081"
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Namespace == "" {
		o.Namespace = "gpuadmit-system"
	}
	if o.CertSecret == "" {
		o.CertSecret = "gpuadmit-webhook-tls"
	}
	return o
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// wire registers the handlers, the runnables and the probes.
func (s *Server) wire(kube kubernetes.Interface) error {
	am, err := admission.NewMetrics(s.opts.Registry)
	if err != nil {
		return err
	}
	if err := registerStateMetrics(s.opts.Registry, s.Ledger, s.Engine); err != nil {
		return err
	}
	pm, err := newPolicyMetrics(s.opts.Registry)
	if err != nil {
		return err
	}
	dec, err := decision.New(s.Engine, s.opts.Settings, s.Ledger, decision.Options{Log: s.opts.Log.WithName("decision")})
	if err != nil {
		return err
	}
	hooks := s.mgr.GetWebhookServer()
	hooks.Register(MutatePath, &ctrladmission.Webhook{Handler: &admission.Mutator{
		Demand: dec, Metrics: am, Log: s.opts.Log.WithName("mutate")}, RecoverPanic: ptr(true)})
	hooks.Register(ValidatePath, &ctrladmission.Webhook{Handler: &admission.Validator{
		Decider: dec, Reserver: s.Ledger, TTL: s.opts.ReservationTTL, Metrics: am, Log: s.opts.Log.WithName("validate")},
		RecoverPanic: ptr(true)})
	runnables := []manager.Runnable{
		manager.RunnableFunc(func(ctx context.Context) error { s.feed.Start(ctx); <-ctx.Done(); return nil }),
		&policySync{kube: kube, engine: s.Engine, namespace: s.opts.Namespace, selector: s.opts.PolicySelector,
			dir: s.opts.PolicyDir, log: s.opts.Log.WithName("policy-sync"), metrics: pm},
	}
	if s.rotator != nil {
		runnables = append(runnables, s.rotator)
	}
	for _, r := range runnables {
		if err := s.mgr.Add(r); err != nil {
			return fmt.Errorf("adding runnable: %w", err)
		}
	}
	if err := s.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	if err := s.mgr.AddReadyzCheck("gpuadmit", func(*http.Request) error { return s.NotReady() }); err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	return s.mgr.AddReadyzCheck("webhook", hooks.StartedChecker())
}

// NotReady says why the server must not take traffic yet, or nil: the
// informers have synced, a policy set is active and the certificate is in
// place.
func (s *Server) NotReady() error {
	switch {
	case !s.feed.Synced():
		return errors.New("the pod, node and resourcequota informers have not synced")
	case s.Engine.Status().Revision == "":
		return fmt.Errorf("no policy set is active (last error: %s)", s.Engine.Status().LastError)
	case s.rotator != nil && !s.rotator.Ready():
		return errors.New("the serving certificate or the caBundles are not in place")
	}
	return nil
}

// Register adds another handler to the webhook server (before Start).
func (s *Server) Register(path string, h http.Handler) { s.mgr.GetWebhookServer().Register(path, h) }

// Start runs everything until ctx is done, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	if err := s.mgr.Start(ctx); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
