package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
	"github.com/gpuadmit/gpuadmit/pkg/admitqueue"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/certs"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/events"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
	"github.com/gpuadmit/gpuadmit/pkg/forward"
	"github.com/gpuadmit/gpuadmit/pkg/gang"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/membership"
	"github.com/gpuadmit/gpuadmit/pkg/metrics"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
	"github.com/gpuadmit/gpuadmit/pkg/serving"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
	"github.com/gpuadmit/gpuadmit/policy"
)

// Webhook paths.
const (
	MutatePath   = "/mutate-pods"
	ValidatePath = "/validate-pods"
	// ValidateClaimsPath takes the reviews of ResourceClaims.
	ValidateClaimsPath = "/validate-resourceclaims"
)

// Options configure a Server: the configuration, and the wiring of one
// deployment (ports, certificates, names). Zero wiring values take the
// defaults noted.
type Options struct {
	// Config is gpuadmit's configuration, defaulted (config.Load; nil:
	// config.Default()).
	Config *config.Configuration
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
	CertDir      string
	CertSecret   string
	CertDNSNames []string
	CertIPs      []net.IP
	// CertCheckEvery is how often the certificate Secret is checked.
	CertCheckEvery    time.Duration
	MutatingWebhook   string
	ValidatingWebhook string
	// ShutdownTimeout bounds graceful shutdown (default 10s).
	ShutdownTimeout time.Duration
	// Replica names this replica (its reservations' writer and its
	// progress Lease); default the host name.
	Replica string
	// Version and Revision name this build in gpuadmit_build_info
	// (cmd/webhook's -ldflags); empty: the binary's module version and VCS
	// stamp, else "unknown".
	Version, Revision string
	// AdvertiseAddress (host:port) is where the other replicas reach this
	// one's webhook server: the validating reviews of GPU pods are
	// forwarded to the replica that owns their namespace, so that replicas
	// do not conflict on its GPUReservationSet. Empty: no forwarding.
	AdvertiseAddress string
	// TLSMinVersion is the lowest TLS version the webhook and metrics
	// servers accept (default TLS 1.3).
	TLSMinVersion uint16
	// ClientCAFile, when set, turns on client authentication: a connection
	// to the webhook port must present the API server's client certificate
	// (signed by this CA, with one of ClientCommonNames; any name when
	// empty) or the replicas' shared serving certificate.
	ClientCAFile      string
	ClientCommonNames []string
	// MetricsInsecure serves /metrics over plain HTTP without
	// authentication; by default it is served over HTTPS to clients whose
	// bearer token the API server authenticates and authorizes for GET
	// /metrics (TokenReview, SubjectAccessReview).
	MetricsInsecure bool
	// Clock is this replica's clock, which also times the reservation
	// store's and the summarizer's waits (default the wall clock; a test
	// skews it).
	Clock             clock.WithTicker
	Log               logr.Logger
	AnswerBeforeWrite bool // admitqueue.Options' (a test build's benchmark switch)
}

// LeaderElectionID names the Lease through which one replica is elected
// to write the GPUUsage summaries.
const LeaderElectionID = "gpuadmit-usage-status"

// Server is the wired admission webhook.
type Server struct {
	mgr    manager.Manager
	Ledger *ledger.Ledger
	// Budgets tracks the GPU-hour budgets (every replica): what admission
	// decides against (Standings) and the views read (PodBurns).
	Budgets *budget.Tracker
	// budgetsSynced are the budget informers' (watchBudgets).
	budgetsSynced []toolscache.InformerSynced
	Engine        *policy.Engine
	Store         *admitqueue.Store
	members       *membership.Members
	feed          *feed.Feed
	usage         toolscache.InformerSynced
	rotator       *certs.Rotator
	// certificate is the serving certificate's source (the rotator, or
	// the files' watcher in CertDir).
	certificate certificates
	certFiles   *certwatcher.CertWatcher
	counters    *metrics.Counters
	// events records the validating handlers' denials as Events
	// (pkg/events), from Start until the webhook server has stopped.
	events *events.Recorder
	// groups reads the PodGroups (nil: the API server does not serve them).
	groups *gang.Groups
	// stamper signs and verifies the requesting-user stamp (its key is
	// read before the ledger is built).
	stamper *stamp.Stamper
	opts    Options
	// drain is set once shutdown began: readiness fails first, so that
	// traffic moves to other replicas before the server stops.
	drain atomic.Bool
}

// The denials' Events are the validating handlers' recorder.
var _ admission.Recorder = (*events.Recorder)(nil)

// New wires a server against the API server of cfg. Nothing runs until Start.
func New(cfg *rest.Config, opts Options) (*Server, error) {
	opts = withDefaults(opts)
	if errs := config.Validate(opts.Config); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	// Every allowed GPU pod costs a write (its reservation): the client's
	// rate is the configuration's (clientConnection). No gzip but for the
	// built-in types' watches (below): compressing every flush of the
	// reservation objects' watch cost the API server and the replicas CPU
	// on every create (docs/performance.md).
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = *opts.Config.ClientConnection.QPS, int(*opts.Config.ClientConnection.Burst)
	cfg.DisableCompression = true
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	s := &Server{opts: opts}
	if err := s.certificates(kube); err != nil {
		return nil, err
	}
	if err := s.manager(cfg); err != nil {
		return nil, err
	}
	if err := s.loadStamper(kube); err != nil {
		return nil, err
	}
	if s.counters, err = metrics.NewCounters(opts.Registry); err != nil {
		return nil, err
	}
	if err := metrics.RegisterInfo(opts.Registry, metrics.Info{Version: opts.Version, Revision: opts.Revision, ClientCAFile: opts.ClientCAFile},
		s.certificate); err != nil {
		return nil, err
	}
	if err := s.watches(cfg); err != nil {
		return nil, err
	}
	s.Engine = policy.New(policy.Options{Log: opts.Log.WithName("policy"), EvalTimeout: opts.Config.Admission.PolicyEvaluationTimeout.Duration,
		MemoryBudget: int64(*opts.Config.Policy.MemoryBudgetMiB) << 20})
	if err := s.wire(kube); err != nil {
		return nil, err
	}
	return s, nil
}

// certificates serve this replica's certificate (*certs.Rotator,
// *certwatcher.CertWatcher).
type certificates interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// certificates sets up the serving certificate: the rotator's (a CA of
// its own in CertSecret), or the files of CertDir.
func (s *Server) certificates(kube kubernetes.Interface) error {
	opts := s.opts
	if opts.CertDir != "" {
		var err error
		if s.certFiles, err = certwatcher.New(filepath.Join(opts.CertDir, "tls.crt"), filepath.Join(opts.CertDir, "tls.key")); err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
		s.certificate = s.certFiles
		return nil
	}
	s.rotator = certs.NewRotator(kube, certs.Options{
		Namespace: opts.Namespace, SecretName: opts.CertSecret, DNSNames: opts.CertDNSNames, IPs: opts.CertIPs,
		MutatingWebhooks: nonEmpty(opts.MutatingWebhook), ValidatingWebhooks: nonEmpty(opts.ValidatingWebhook),
		CheckEvery: opts.CertCheckEvery,
		Log:        opts.Log.WithName("certs"),
	})
	s.certificate = s.rotator
	return nil
}

// manager builds the controller-runtime manager with the bounded webhook
// server (pkg/serving).
func (s *Server) manager(cfg *rest.Config) error {
	opts := s.opts
	hooks, err := serving.New(serving.Options{
		Host: opts.Host, Port: opts.Port, GetCertificate: s.certificate.GetCertificate, MinVersion: opts.TLSMinVersion,
		Clients:    serving.Clients{CAFile: opts.ClientCAFile, CommonNames: opts.ClientCommonNames},
		PeerHeader: forward.Header,
		// A review's handler is bounded by reviewTimeout; the answer must
		// still be written after it.
		Limits:          serving.Limits{MaxBodyBytes: admission.MaxReviewBytes, WriteTimeout: opts.Config.Admission.ReviewTimeout.Duration + 5*time.Second},
		ShutdownTimeout: opts.ShutdownTimeout, Registry: opts.Registry, Log: opts.Log.WithName("webhook-server"),
	})
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), gpuadmitv1.AddToScheme(scheme), reportsv1alpha1.Install(scheme)); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	s.mgr, err = ctrl.NewManager(cfg, manager.Options{
		Scheme: scheme,
		// The manager's cache holds the GPUReservationSets (and, on the
		// elected replica, the GPUUsage objects) and this server's
		// progress Leases only; pods are read from the API server directly.
		Cache: ctrlcache.Options{ByObject: map[client.Object]ctrlcache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]ctrlcache.Config{opts.Namespace: {}},
				Label: labels.SelectorFromSet(labels.Set{membership.ProgressLabel: "true"})},
		}},
		Logger:                  opts.Log,
		Metrics:                 metrics.ServingOptions(opts.MetricsAddr, opts.MetricsInsecure, opts.TLSMinVersion, s.certificate),
		HealthProbeBindAddress:  opts.ProbeAddr,
		GracefulShutdownTimeout: &opts.ShutdownTimeout,
		// No manager-wide leader election: losing it would end the process.
		// The summary writer elects itself (pkg/election); everything else
		// runs on every replica.
		WebhookServer: hooks,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}

// watches builds the ledger and the watches that feed it, and the
// replica's membership (pkg/membership).
func (s *Server) watches(cfg *rest.Config) error {
	opts := s.opts
	adm := opts.Config.Admission
	claims, err := dra.NewCharger(config.DeviceClasses(opts.Config), config.Families(opts.Config), config.ChargerOptions(opts.Config)...)
	if err != nil {
		return fmt.Errorf("dra.deviceClasses: %w", err)
	}
	s.Ledger = ledger.New(ledger.Options{Families: config.Families(opts.Config), Claims: claims,
		MaxDeviceMemoryMiB: config.MaxDeviceMemoryMiB(opts.Config), Users: s.stamper, Log: opts.Log.WithName("ledger")})
	// The watches list and watch built-in types only: in protobuf, the API
	// server's own encoding, decoding costs a fraction of JSON's (a relist
	// of 100k pods is most of a cold start), and gzipped: a cold start
	// without it took longer (tests/relist's protobuf-nogzip).
	feedCfg := podwire.ProtobufConfig(cfg)
	feedCfg.DisableCompression = false
	feedKube, err := kubernetes.NewForConfig(feedCfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// The team quotas are gpuadmit's own kind: the manager's cache watches
	// them, as it watches the GPUReservationSets, and the feed hands them
	// to the ledger (its sync gate waits for their list).
	teams, err := s.mgr.GetCache().GetInformer(context.Background(), &gpuadmitv1.GPUClusterQuota{}, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the GPUClusterQuota resource (is its CRD installed?): %w", err)
	}
	sink := s.newBudgets()
	if err := s.watchBudgets(); err != nil {
		return err
	}
	s.feed, err = feed.NewFeed(feedKube, sink, feed.Options{Log: opts.Log.WithName("feed"), PodConfig: feedCfg, ClusterQuotas: teams, ReleaseLists: true,
		Freshness: feed.FreshnessOptions{ProbeEvery: adm.Watches.ProbeEvery.Duration, StaleAfter: adm.Watches.StaleAfter.Duration, Clock: opts.Clock}})
	if err != nil {
		return fmt.Errorf("informers: %w", err)
	}
	s.members = membership.New(s.mgr.GetClient(), membership.Options{Namespace: opts.Namespace, Replica: opts.Replica,
		Watch: s.feed, Clock: opts.Clock, Log: opts.Log.WithName("membership")})
	return nil
}

// reservations builds the store of the GPUReservationSets, deciding with dec.
func (s *Server) reservations(dec admitqueue.Decider) error {
	opts := s.opts
	r := opts.Config.Admission.Reservations
	usage, err := s.mgr.GetCache().GetInformer(context.Background(), &gpuadmitv1.GPUReservationSet{}, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the GPUReservationSet resource (is its CRD installed?): %w", err)
	}
	s.usage = usage.HasSynced
	parts := admitqueue.Parts{Client: s.mgr.GetClient(), API: s.mgr.GetAPIReader(), Ledger: s.Ledger, Watch: s.feed,
		Members: s.members, Decider: dec, Metrics: s.counters, Events: s.events, Teams: s.Ledger}
	if s.groups != nil { // never a typed nil: a nil Groups is "not served"
		parts.Groups = s.groups
	}
	s.Store = admitqueue.NewStore(parts,
		admitqueue.Options{Replica: opts.Replica, Clock: opts.Clock, ConfirmAfter: r.ConfirmAfter.Duration, RecheckMax: r.RecheckMax.Duration,
			ReadsPerSecond: int(*r.ReadsPerSecond), MaxReservations: int(*r.MaxPerNamespace), OwnWebhookConfiguration: opts.ValidatingWebhook,
			ReviewTimeout: opts.Config.Admission.ReviewTimeout.Duration, HoldTimeout: opts.Config.Admission.Gangs.HoldTimeout.Duration,
			Namespace: opts.Namespace, LeaveGrace: leaveGrace(opts.Config), Log: opts.Log.WithName("admitqueue"),
			AnswerBeforeWrite: opts.AnswerBeforeWrite})
	if _, err := usage.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: s.Store.Changed,
		UpdateFunc: func(_, obj any) { s.Store.Changed(obj) }, DeleteFunc: s.Store.Deleted}); err != nil {
		return fmt.Errorf("watching GPUReservationSet: %w", err)
	}
	return nil
}

// DefaultOptions are the wiring defaults, in one place: the webhook's
// flags show them, and New sets them where Options leaves a zero value
// (but the webhook configurations' names: empty patches no caBundle).
func DefaultOptions() Options {
	return Options{
		Namespace: "gpuadmit-system", Port: 9443, MetricsAddr: ":8080", ProbeAddr: ":8081",
		CertSecret: "gpuadmit-webhook-tls", CertCheckEvery: 10 * time.Second,
		MutatingWebhook: "gpuadmit", ValidatingWebhook: "gpuadmit",
		ShutdownTimeout: 10 * time.Second, TLSMinVersion: tls.VersionTLS13,
	}
}

func withDefaults(o Options) Options {
	d := DefaultOptions()
	if o.Config == nil {
		o.Config = config.Default()
	}
	o.Namespace = cmp.Or(o.Namespace, d.Namespace)
	o.Port = cmp.Or(o.Port, d.Port)
	o.MetricsAddr = cmp.Or(o.MetricsAddr, d.MetricsAddr)
	o.ProbeAddr = cmp.Or(o.ProbeAddr, d.ProbeAddr)
	o.CertSecret = cmp.Or(o.CertSecret, d.CertSecret)
	o.CertCheckEvery = cmp.Or(o.CertCheckEvery, d.CertCheckEvery)
	o.ShutdownTimeout = cmp.Or(o.ShutdownTimeout, d.ShutdownTimeout)
	o.TLSMinVersion = cmp.Or(o.TLSMinVersion, d.TLSMinVersion)
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Replica == "" {
		o.Replica, _ = os.Hostname()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
