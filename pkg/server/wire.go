package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/gpuusage"
)

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
	hooks.Register(MutatePath, s.draining(detached(&ctrladmission.Webhook{Handler: &admission.Mutator{
		Gate: annotateGate{s}, Demand: dec, Metrics: am, Log: s.opts.Log.WithName("mutate")}, RecoverPanic: ptr(true)}, s.opts.Config.Admission.ReviewTimeout)))
	var validate http.Handler = &admission.PodReviews{Webhook: &ctrladmission.Webhook{Handler: &admission.Validator{
		Gate: s, Decider: dec, Reserver: s.Store, Metrics: am, Log: s.opts.Log.WithName("validate")}, RecoverPanic: ptr(true)}}
	if s.opts.AdvertiseAddress != "" {
		fwd, err := newForwarder(s.opts.Registry, s.Store.Progress().Owner, s.servingCertificate, s.opts.TLSMinVersion, s.NotReady,
			s.Ledger.Settings().Names, s.opts.Log.WithName("forward"))
		if err != nil {
			return err
		}
		fwd.fallback = s.Store.Progress().Fallback
		validate = fwd.wrap(validate)
	}
	hooks.Register(ValidatePath, s.draining(detached(validate, s.opts.Config.Admission.ReviewTimeout)))
	runnables := []manager.Runnable{
		manager.RunnableFunc(func(ctx context.Context) error { s.feed.Start(ctx); <-ctx.Done(); return nil }),
		s.Store,
		&policySync{kube: kube, engine: s.Engine, namespace: s.opts.Namespace, selector: s.opts.Config.Policy.ConfigMapSelector,
			dir: s.opts.Config.Policy.Directory, log: s.opts.Log.WithName("policy-sync"), metrics: pm},
	}
	if s.rotator != nil {
		runnables = append(runnables, s.rotator)
	}
	if s.certFiles != nil {
		runnables = append(runnables, s.certFiles)
	}
	for _, r := range runnables {
		if err := s.mgr.Add(everyReplica{r}); err != nil {
			return fmt.Errorf("adding runnable: %w", err)
		}
	}
	// The summaries users read (kubectl get gpuusage) have one writer: the
	// replica elected through the Lease gpuadmit-usage-status.
	summary := &gpuusage.Summarizer{Client: s.mgr.GetClient(), Ledger: s.Ledger, Clock: s.opts.Clock,
		OnWrite: s.metrics.summaryWritten, Log: s.opts.Log.WithName("summary")}
	if err := s.mgr.Add(&elected{run: summary.Start, kube: kube, namespace: s.opts.Namespace, name: LeaderElectionID,
		identity: s.opts.Replica, log: s.opts.Log.WithName("summary")}); err != nil {
		return fmt.Errorf("adding the summarizer: %w", err)
	}
	if err := s.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	if err := s.mgr.AddReadyzCheck("gpuadmit", func(*http.Request) error { return s.NotReady() }); err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	return s.mgr.AddReadyzCheck("webhook", hooks.StartedChecker())
}

// everyReplica runs a runnable on every replica, elected or not.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }

// advertise is the address published for the other replicas to forward
// reviews to: AdvertiseAddress while this replica can decide, else "".
func (s *Server) advertise() string {
	if s.opts.AdvertiseAddress == "" || s.NotReady() != nil {
		return ""
	}
	return s.opts.AdvertiseAddress
}

// servingCertificate is the certificate this replica serves, which it also
// presents as a client to the other replicas.
func (s *Server) servingCertificate() (*tls.Certificate, error) {
	return s.certificate(&tls.ClientHelloInfo{})
}

// annotateGate is the mutating handler's Gate: the annotation needs the
// ledger's capacity only, so a replica cut off from the API server (which
// cannot write reservations, hence refuses to validate) still annotates.
type annotateGate struct{ s *Server }

func (g annotateGate) Blocked() error {
	if missing := g.s.feed.NotSynced(); missing != "" {
		return fmt.Errorf("the %s watches have not synced yet", missing)
	}
	return nil
}

func (g annotateGate) Stale() string { return g.s.feed.Stale() }

// Blocked says why no admission decision may be made yet, or nil (the
// validating handler's Gate): the watches have synced, a policy set is active, and,
// with admission.staleFeed Deny, no watch is stale. With the default
// (Reservations) a stale watch only over-counts (deletions are not seen)
// and every pod admitted meanwhile stays reserved until seen, so the
// handlers keep deciding, with a warning.
func (s *Server) Blocked() error {
	if missing := s.feed.NotSynced(); missing != "" {
		return fmt.Errorf("the %s watches have not synced yet, so the usage ledger would under-count", missing)
	}
	if !s.usage() {
		return errors.New("the GPUUsage watch has not synced yet, so other replicas' reservations are unknown")
	}
	if err := s.Store.Progress().Announced(); err != nil {
		return err
	}
	if err := s.Store.Progress().Connected(); err != nil {
		return err
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
	if s.drain.Load() {
		return errors.New("shutting down")
	}
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

// Drain fails readiness from now on: a load balancer (the Service) stops
// sending new reviews here while the server still answers, before it stops.
func (s *Server) Drain() { s.drain.Store(true) }

// draining answers with "Connection: close" once Drain was called, or
// while the replica is not ready, so that the API server opens its next
// connections elsewhere (through the Service, to a ready replica: an
// existing connection stays with this one) and none is left idle here when
// the server stops (a request on an idle connection the server closes
// would fail).
func (s *Server) draining(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.drain.Load() || s.NotReady() != nil {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// Start runs everything until ctx is done, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	if err := s.mgr.Start(ctx); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// detached serves h with a request context that the server's shutdown does
// not cancel (controller-runtime derives request contexts from the
// manager's), bounded by timeout instead: a review in flight when the
// server stops is answered, since the graceful shutdown waits for it, and
// no review outlives the API server's own timeout.
func detached(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), timeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
