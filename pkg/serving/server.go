package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Options configure a Server.
type Options struct {
	// Host and Port to listen on.
	Host string
	Port int
	// GetCertificate returns the serving certificate (also the replicas'
	// shared certificate, which a forwarding replica presents as a client).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// MinVersion is the lowest TLS version accepted (default TLS 1.3).
	MinVersion uint16
	// Clients configures client authentication.
	Clients Clients
	// PeerHeader, when set, is a request header only the replicas may send:
	// a request carrying it on a connection that did not present the
	// serving certificate is refused with 403.
	PeerHeader string
	// Limits bound what clients can make the server hold.
	Limits Limits
	// ShutdownTimeout bounds the graceful shutdown (default 30s).
	ShutdownTimeout time.Duration
	// Registry receives the server's counters (nil: none are exported).
	Registry prometheus.Registerer
	Log      logr.Logger
	// Clock times StartedChecker's handshakes and ticks the client CA's
	// reloads (default the real clock).
	Clock clock.WithTicker
}

// Server is a webhook.Server (controller-runtime) with authenticated TLS
// and bounded reads. Register handlers before Start.
type Server struct {
	opts     Options
	mux      *http.ServeMux
	cas      caPool
	inflight *semaphore.Weighted
	budget   *semaphore.Weighted
	clients  clientBudgets
	slots    clientSlots
	refused  *prometheus.CounterVec
	started  atomic.Bool
	// shookAt is when StartedChecker's last handshake succeeded (unix
	// nanoseconds by Options.Clock; 0: none yet, or it failed since).
	shookAt atomic.Int64
}

var _ webhook.Server = (*Server)(nil)

// New returns a server; it reads Clients.CAFile now, so that a missing or
// invalid file is an error before anything runs.
func New(opts Options) (*Server, error) {
	opts = withDefaults(opts)
	if opts.GetCertificate == nil {
		return nil, errors.New("webhook server: no serving certificate")
	}
	if opts.Limits.MaxBodyBytes > opts.Limits.PerClientBudget || opts.Limits.PerClientBudget > opts.Limits.BodyBudget {
		return nil, fmt.Errorf("webhook server: want MaxBodyBytes (%d) <= PerClientBudget (%d) <= BodyBudget (%d)",
			opts.Limits.MaxBodyBytes, opts.Limits.PerClientBudget, opts.Limits.BodyBudget)
	}
	if opts.Limits.PerClientInFlight > opts.Limits.MaxInFlight {
		return nil, fmt.Errorf("webhook server: want PerClientInFlight (%d) <= MaxInFlight (%d)", opts.Limits.PerClientInFlight, opts.Limits.MaxInFlight)
	}
	s := &Server{opts: opts, mux: http.NewServeMux(),
		inflight: semaphore.NewWeighted(int64(opts.Limits.MaxInFlight)),
		budget:   semaphore.NewWeighted(opts.Limits.BodyBudget),
		clients:  clientBudgets{per: opts.Limits.PerClientBudget, m: map[string]*clientBudget{}},
		slots:    clientSlots{per: opts.Limits.PerClientInFlight, m: map[string]int{}},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuadmit_webhook_refused_total",
			Help: "Connections and requests the webhook server refused before any handler ran, by reason: client-certificate (TLS client authentication), not-replica (the forwarding header from a client without the replicas' certificate), busy (requests in flight at the cap), client-busy (one client address's requests in flight at its share), body-budget (the bytes of bodies read at once at the cap, for all clients or one address), too-large, read (the body did not arrive in time)."},
			[]string{"reason"}),
	}
	for _, r := range []string{refusedClientCertificate, refusedNotReplica, refusedBusy, refusedClientBusy, refusedBodyBudget, refusedTooLarge, refusedRead} {
		s.refused.WithLabelValues(r) // every series exists from the start
	}
	if err := s.cas.load(opts.Clients.CAFile); err != nil {
		return nil, err
	}
	if opts.Registry != nil {
		if err := opts.Registry.Register(s.refused); err != nil {
			return nil, fmt.Errorf("registering the webhook server's metrics: %w", err)
		}
	}
	return s, nil
}

func withDefaults(o Options) Options {
	if o.MinVersion == 0 {
		o.MinVersion = tls.VersionTLS13
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.Clients.ReloadEvery <= 0 {
		o.Clients.ReloadEvery = 10 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	o.Limits = o.Limits.withDefaults()
	return o
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Register adds a handler (before Start).
func (s *Server) Register(path string, hook http.Handler) { s.mux.Handle(path, hook) }

// WebhookMux returns the server's mux. It is not dead code: controller-runtime's
// webhook.Server interface requires it, and the manager runs this server as
// its webhook server (manager.Options.WebhookServer).
func (s *Server) WebhookMux() *http.ServeMux { return s.mux }

// Start serves until ctx ends, then shuts down gracefully: requests in
// flight are answered within ShutdownTimeout.
func (s *Server) Start(ctx context.Context) error {
	addr := net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	l := s.opts.Limits
	// HTTP/1.1 only: the API server then spreads concurrent reviews over
	// several connections, hence over replicas behind the Service; a
	// draining replica can close each connection after a response; and
	// HTTP/2's rapid-reset floods do not apply.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Protocols:         &protocols,
		Handler:           s.bounded(s.mux),
		TLSConfig:         s.tlsConfig(),
		ReadHeaderTimeout: l.ReadTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		// Handshake errors of refused clients are counted; their lines go
		// to the log at V(2) only, so that a flood cannot fill the log.
		ErrorLog: log.New(logWriter{s.opts.Log.V(2)}, "", 0),
	}
	go s.cas.reload(ctx, s.opts.Clients.CAFile, s.opts.Clock.NewTicker(s.opts.Clients.ReloadEvery), s.opts.Log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			s.opts.Log.Error(err, "shutting down the webhook server")
		}
	}()
	s.opts.Log.Info("serving webhooks", "address", addr, "clientAuthentication", s.opts.Clients.CAFile != "",
		"minTLSVersion", tls.VersionName(s.opts.MinVersion))
	s.started.Store(true)
	err = srv.ServeTLS(ln, "", "")
	s.started.Store(false)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	<-done
	return nil
}

// StartedChecker reports healthy once the server completes a TLS handshake
// (presenting the serving certificate, as a replica does), and for as long
// as it serves. A handshake that succeeded is trusted for handshakeRecheck
// before the next check dials again (a readiness probe every 100 ms would
// otherwise cost the replica two handshakes each time); a failed one is
// dialled again at every check.
func (s *Server) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if !s.started.Load() {
			return errors.New("webhook server is not serving")
		}
		now := s.opts.Clock.Now()
		if at := s.shookAt.Load(); at != 0 && now.Sub(time.Unix(0, at)) < handshakeRecheck {
			return nil
		}
		if err := s.handshake(); err != nil {
			s.shookAt.Store(0)
			return err
		}
		s.shookAt.Store(now.UnixNano())
		return nil
	}
}

// handshakeRecheck is how long StartedChecker trusts a handshake that
// succeeded (the chart's readiness probe runs every 5 s).
const handshakeRecheck = 10 * time.Second

// handshake dials the server's own port and completes a TLS handshake.
func (s *Server) handshake() error {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(loopbackFor(s.opts.Host), strconv.Itoa(s.opts.Port)), &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // a liveness check of our own port
		MinVersion:         s.opts.MinVersion,
		NextProtos:         []string{"http/1.1"},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.opts.GetCertificate(&tls.ClientHelloInfo{})
		},
	})
	if err != nil {
		return fmt.Errorf("webhook server is not reachable: %w", err)
	}
	return conn.Close()
}

// loopbackFor is the address the checker dials for a listen host.
func loopbackFor(host string) string {
	if host == "" || host == "0.0.0.0" || host == "::" {
		return "127.0.0.1"
	}
	return host
}

// logWriter writes net/http's error lines to a logger.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("webhook server", "error", string(trimNewline(p)))
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
