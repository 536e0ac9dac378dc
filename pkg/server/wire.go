package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/election"
	"github.com/gpuadmit/gpuadmit/pkg/events"
	"github.com/gpuadmit/gpuadmit/pkg/forward"
	"github.com/gpuadmit/gpuadmit/pkg/metrics"
	"github.com/gpuadmit/gpuadmit/pkg/openreports"
	"github.com/gpuadmit/gpuadmit/pkg/policysync"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
	"github.com/gpuadmit/gpuadmit/pkg/webhookcheck"
)

// wire builds the decision and the reservation store, and registers the
// handlers, the runnables, the metrics and the probes.
func (s *Server) wire(kube kubernetes.Interface) error {
	dec, err := decision.New(s.Engine, s.Ledger, s.opts.Config, s.opts.Log.WithName("decision"), s.budgetOption())
	if err != nil {
		return err
	}
	if s.events, err = events.NewForConfig(s.mgr.GetConfig(), s.opts.Replica, s.opts.Log.WithName("events")); err != nil {
		return err
	}
	s.events.WithOwners(s.mgr.GetAPIReader(), s.opts.Clock) // a denied pod's Deployment or CronJob
	if s.groups, err = s.podGroups(kube); err != nil {
		return err
	}
	if err := s.reservations(dec); err != nil {
		return err
	}
	if err := metrics.RegisterState(s.opts.Registry, s.Ledger, s.Engine, s.feed, s.Store); err != nil {
		return err
	}
	if err := metrics.RegisterTeams(s.opts.Registry, s.Ledger, s.Store); err != nil {
		return err
	}
	if err := metrics.RegisterBudgets(s.opts.Registry, s.Budgets, s.opts.Clock); err != nil {
		return err
	}
	if err := s.handlers(kube, dec); err != nil {
		return err
	}
	if err := s.runnables(kube); err != nil {
		return err
	}
	if err := s.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	if err := s.mgr.AddReadyzCheck("gpuadmit", func(*http.Request) error { return s.NotReady() }); err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	return s.mgr.AddReadyzCheck("webhook", s.mgr.GetWebhookServer().StartedChecker())
}

// handlers registers the mutating and validating handlers; with an
// advertised address, the validating reviews of GPU pods go to their
// namespace's owner first.
func (s *Server) handlers(kube kubernetes.Interface, dec *decision.Decider) error {
	am, err := admission.NewMetrics(s.opts.Registry)
	if err != nil {
		return err
	}
	hooks := s.mgr.GetWebhookServer()
	requestLog := func(name string) ctrlLog {
		return func(_ logr.Logger, req *ctrladmission.Request) logr.Logger {
			return ctrladmission.DefaultLogConstructor(s.opts.Log.WithName(name), req)
		}
	}
	hooks.Register(MutatePath, s.draining(detached(&ctrladmission.Webhook{Handler: &admission.Mutator{
		Gate: annotateGate{s}, Demand: dec, Metrics: am, Stamp: s.stamper}, RecoverPanic: ptr.To(true), LogConstructor: requestLog("mutate")},
		s.opts.Config.Admission.ReviewTimeout.Duration)))
	var validate http.Handler = &admission.PodReviews{Webhook: &ctrladmission.Webhook{Handler: &admission.Validator{
		Gate: s, GPUPods: dec, Reserver: s.Store, Metrics: am, Events: s.events, Users: s.stamper}, RecoverPanic: ptr.To(true),
		LogConstructor: requestLog("validate")}}
	if s.opts.AdvertiseAddress != "" {
		fwd, err := forward.New(forward.Options{Registry: s.opts.Registry, Owners: s.members, Certificates: s.certificate,
			MinTLS: s.opts.TLSMinVersion, Ready: s, MaxReviewBytes: admission.MaxReviewBytes,
			Log: s.opts.Log.WithName("forward")})
		if err != nil {
			return err
		}
		validate = fwd.Wrap(validate)
	}
	hooks.Register(ValidatePath, s.draining(detached(validate, s.opts.Config.Admission.ReviewTimeout.Duration)))
	claims := &ctrladmission.Webhook{Handler: &admission.ClaimValidator{Gate: s, Claims: dec, Reserver: s.Store, Metrics: am, Events: s.events,
		Users: s.stamper},
		RecoverPanic: ptr.To(true), LogConstructor: requestLog("validate-claims")}
	hooks.Register(ValidateClaimsPath, s.draining(detached(claims, s.opts.Config.Admission.ReviewTimeout.Duration)))
	if err := s.stampHandlers(kube, am, requestLog); err != nil {
		return err
	}
	return s.workloads(dec, am, requestLog)
}

// runnables adds what runs on every replica (the watches, the membership,
// the store's cleaner, the policy sync, the advertised address, the
// certificates) and, on the elected replica, the summary writer.
func (s *Server) runnables(kube kubernetes.Interface) error {
	policies, err := policysync.New(policysync.Options{Kube: kube, Engine: s.Engine, Namespace: s.opts.Namespace,
		Selector: *s.opts.Config.Policy.ConfigMapSelector, Dir: *s.opts.Config.Policy.Directory, Registry: s.opts.Registry,
		Log: s.opts.Log.WithName("policy-sync")})
	if err != nil {
		return err
	}
	check, err := webhookcheck.New(kube, webhookcheck.Options{Config: s.opts.Config, MutatingWebhook: s.opts.MutatingWebhook,
		ValidatingWebhook: s.opts.ValidatingWebhook, Registry: s.opts.Registry, Log: s.opts.Log.WithName("webhook-configuration")})
	if err != nil {
		return err
	}
	runnables := []manager.Runnable{
		manager.RunnableFunc(func(ctx context.Context) error { s.feed.Start(ctx); <-ctx.Done(); return nil }),
		s.members,
		s.Store,
		policies,
		manager.RunnableFunc(s.advertise),
		check,
	}
	if s.rotator != nil {
		runnables = append(runnables, s.rotator)
	}
	if s.certFiles != nil {
		runnables = append(runnables, s.certFiles)
	}
	if s.groups != nil {
		runnables = append(runnables, groupsRunnable(s.groups))
	}
	for _, r := range runnables {
		if err := s.mgr.Add(everyReplica{r}); err != nil {
			return fmt.Errorf("adding runnable: %w", err)
		}
	}
	// The summaries users read (kubectl get gpuusage) have one writer: the
	// replica elected through the Lease gpuadmit-usage-status.
	summaries := &summary.Summarizer{Client: s.mgr.GetClient(), Ledger: s.Ledger, Reservations: s.Store, Clock: s.opts.Clock,
		OnWrite: s.counters.SummaryWritten, Events: s.events, DeniedFrom: kube, Namespace: s.opts.Namespace,
		Log: s.opts.Log.WithName("summary")}
	run := summaries.Start
	if s.opts.Config.OpenReportsEnabled() {
		reports := &openreports.Writer{Client: s.mgr.GetClient(), Reader: s.mgr.GetAPIReader(), Ledger: s.Ledger,
			Reservations: s.Store, Namespace: s.opts.Namespace, Budgets: s.Budgets, NearPercent: nearPercent(s.opts),
			Clock: s.opts.Clock, Log: s.opts.Log.WithName("openreports")}
		run = election.Both(summaries.Start, reports.Start)
	}
	if err := s.mgr.Add(&election.Elected{Run: run, Kube: kube, Namespace: s.opts.Namespace, Name: LeaderElectionID,
		Identity: s.opts.Replica, Log: s.opts.Log.WithName("summary")}); err != nil {
		return fmt.Errorf("adding the summarizer: %w", err)
	}
	return s.electBudgets(kube)
}

// everyReplica runs a runnable on every replica, elected or not.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }

// advertise tells the membership, until ctx ends, the address where this
// replica takes reviews forwarded by the others: AdvertiseAddress while it
// can decide, else "" (so that the others stop forwarding to it).
func (s *Server) advertise(ctx context.Context) error {
	if s.opts.AdvertiseAddress == "" {
		return nil
	}
	wait.UntilWithContext(ctx, func(context.Context) {
		addr := ""
		if s.NotReady() == nil {
			addr = s.opts.AdvertiseAddress
		}
		s.members.Advertise(addr)
	}, advertiseEvery)
	return nil
}

// advertiseEvery is how often the advertised address follows readiness
// (the membership publishes it every second).
const advertiseEvery = 250 * time.Millisecond

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
		return errors.New("the GPUReservationSet watch has not synced yet, so other replicas' reservations are unknown")
	}
	if !s.BudgetsSynced() {
		return errors.New("the GPUBudget and GPUClusterBudget watches have not synced yet, so budgets would go unenforced")
	}
	if err := s.members.Announced(); err != nil {
		return err
	}
	if err := s.members.Connected(); err != nil {
		return err
	}
	if st := s.Engine.Status(); st.Revision == "" {
		return fmt.Errorf("no policy set is active (last error: %s)", st.LastError)
	}
	if *s.opts.Config.Admission.StaleFeed == configv1alpha1.StaleFeedDeny {
		if stale := s.feed.Stale(); stale != "" {
			return fmt.Errorf("a watch is stale and admission.staleFeed is %s: %s", configv1alpha1.StaleFeedDeny, stale)
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

// Start runs everything until ctx is done, then shuts down gracefully:
// the denials' Events recorded until the webhook server stopped are
// written before it returns (within eventsFlushTimeout).
func (s *Server) Start(ctx context.Context) error {
	s.events.Start()
	defer s.events.Stop()
	if err := s.mgr.Start(ctx); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

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

// budgetOption makes admission hold the budgets s.Budgets tracks, at this
// replica's clock (the one the Tracker stamps its observations with); no
// budget without a Tracker.
func (s *Server) budgetOption() decision.Option {
	if s.Budgets == nil {
		return decision.WithBudgets(nil, s.opts.Clock) // a nil *Tracker must not become a non-nil interface
	}
	return decision.WithBudgets(s.Budgets, s.opts.Clock)
}

// leaveGrace is teams.leaveGrace (0: the store's default).
func leaveGrace(c *configv1alpha1.Configuration) time.Duration {
	if c.Teams == nil || c.Teams.LeaveGrace == nil {
		return 0
	}
	return c.Teams.LeaveGrace.Duration
}
