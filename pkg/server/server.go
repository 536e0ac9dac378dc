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
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/policy"
)

// Webhook paths.
const (
	MutatePath   = "/mutate-pods"
	ValidatePath = "/validate-pods"
)

// Options configure a Server: the configuration, and the wiring of one
// deployment (ports, certificates, names). Zero wiring values take the
// defaults noted.
type Options struct {
	// Config is gpuadmit's configuration (config.Load, or config.Default()).
	Config config.Configuration
	// Namespace is the server's own namespace: policy ConfigMaps and the
	// certificate Secret live there.
	Namespace string
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
	mgr       manager.Manager
	Ledger    *cache.Ledger
	Engine    *policy.Engine
	feed      *cache.Feed
	confirmer *cache.Confirmer
	rotator   *certs.Rotator
	metrics   *serverMetrics
	opts      Options
}

// New wires a server against the API server of cfg. Nothing runs until Start.
func New(cfg *rest.Config, opts Options) (*Server, error) {
	opts = withDefaults(opts)
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	adm := opts.Config.Admission
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
	if s.metrics, err = newServerMetrics(opts.Registry); err != nil {
		return nil, err
	}
	s.Ledger = cache.New(cache.Options{Settings: opts.Config.Devices, Log: opts.Log.WithName("ledger"),
		ConfirmAfter: adm.Reservations.ConfirmAfter, RecheckMax: adm.Reservations.RecheckMax, OnReservationEnd: s.metrics.reservationEnded})
	s.feed, err = cache.NewFeed(kube, s.Ledger, cache.FeedOptions{Log: opts.Log.WithName("feed"),
		Freshness: cache.FreshnessOptions{ProbeEvery: adm.Watches.ProbeEvery, StaleAfter: adm.Watches.StaleAfter}})
	if err != nil {
		return nil, fmt.Errorf("informers: %w", err)
	}
	s.confirmer = cache.NewConfirmer(s.Ledger, kube, cache.ConfirmerOptions{Every: time.Second,
		PerTick: adm.Reservations.ReadsPerSecond, Log: opts.Log.WithName("reservations")})
	s.Engine = policy.New(policy.Options{Log: opts.Log.WithName("policy"), EvalTimeout: adm.PolicyEvaluationTimeout})
	if err := s.wire(kube); err != nil {
		return nil, err
	}
	return s, nil
}

func withDefaults(o Options) Options {
	config.SetDefaults(&o.Config)

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
	if err := registerStateMetrics(s.opts.Registry, s.Ledger, s.Engine, s.feed); err != nil {
		return err
	}
	pm, err := newPolicyMetrics(s.opts.Registry)
	if err != nil {
		return err
	}
	dec, err := decision.New(s.Engine, s.Ledger, s.opts.Config, s.opts.Log.WithName("decision"))
	if err != nil {
		return err
	}
	hooks := s.mgr.GetWebhookServer()
	hooks.Register(MutatePath, detached(&ctrladmission.Webhook{Handler: &admission.Mutator{
		Gate: s, Demand: dec, Metrics: am, Log: s.opts.Log.WithName("mutate")}, RecoverPanic: ptr(true)}))
	hooks.Register(ValidatePath, detached(&ctrladmission.Webhook{Handler: &admission.Validator{
		Gate: s, Decider: dec, Reserver: s.Ledger, Metrics: am, Log: s.opts.Log.WithName("validate")},
		RecoverPanic: ptr(true)}))
	runnables := []manager.Runnable{
		manager.RunnableFunc(func(ctx context.Context) error { s.feed.Start(ctx); <-ctx.Done(); return nil }),
		s.confirmer,
		&policySync{kube: kube, engine: s.Engine, namespace: s.opts.Namespace, selector: s.opts.Config.Policy.ConfigMapSelector,
			dir: s.opts.Config.Policy.Directory, log: s.opts.Log.WithName("policy-sync"), metrics: pm},
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

// Blocked says why no admission decision may be made yet, or nil (the
// handlers' Gate): the watches have synced, a policy set is active, and,
// with admission.staleFeed Deny, no watch is stale. With the default
// (Reservations) a stale watch only over-counts (deletions are not seen)
// and every pod admitted meanwhile stays reserved until seen, so the
// handlers keep deciding, with a warning.
func (s *Server) Blocked() error {
	if missing := s.feed.NotSynced(); missing != "" {
		return fmt.Errorf("the %s watches have not synced yet, so the usage ledger would under-count", missing)
	}
	if st := s.Engine.Status(); st.Revision == "" {
		return fmt.Errorf("no policy set is active (last error: %s)", st.LastError)
	}
	if s.opts.Config.Admission.StaleFeed == config.StaleFeedDeny {
		if stale := s.feed.Stale(); stale != "" {
			return fmt.Errorf("a watch is stale and admission.staleFeed is %s: %s", config.StaleFeedDeny, stale)
		}
	}
	return nil
}

// NotReady says why the server must not take traffic yet, or nil: it may
// decide (Blocked) and the certificate is in place.
func (s *Server) NotReady() error {
	if err := s.Blocked(); err != nil {
		return err
	}
	if s.rotator != nil && !s.rotator.Ready() {
		return errors.New("the serving certificate or the caBundles are not in place")
	}
	return nil
}

// Stale describes the watches that have delivered nothing for longer than
// they should ("" when all are fresh).
func (s *Server) Stale() string { return s.feed.Stale() }

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

// reviewTimeout bounds one review: the API server never waits longer for a
// webhook (timeoutSeconds is at most 30).
const reviewTimeout = 30 * time.Second

// detached serves h with a request context that the server's shutdown does
// not cancel (controller-runtime derives request contexts from the
// manager's): a review in flight when the server stops is answered, since
// the graceful shutdown waits for it, rather than failed.
func detached(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), reviewTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
