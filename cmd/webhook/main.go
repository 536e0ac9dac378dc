package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// testHooks registers flags that only a test build has and returns what
// they set on the server's options and client configuration. It is nil in the production binary;
// testhooks.go (build tag gpuadmit_testhooks) sets it to the
// fault-injection flags of internal/cluster/testhooks.
var testHooks func(*flag.FlagSet) func(*server.Options, *rest.Config)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// flags are the webhook's command line: wiring only (names, ports,
// certificates, addresses); everything that tunes decisions is in the
// configuration file (--config).
type flags struct {
	cfgPath, kubeconfig, namespace              *string
	port                                        *int
	metricsAddr, probeAddr, certDir, certSecret *string
	service, certIPs                            *string
	certCheck                                   *time.Duration
	mutating, validating, replica, advertise    *string
	tlsMin, clientCA, clientCNs                 *string
	metricsSecure                               *bool
	drainFor                                    *time.Duration
	verbosity                                   *int
	version                                     *bool
}

// newFlags defines the flags on fs, their defaults server.DefaultOptions.
func newFlags(fs *flag.FlagSet) *flags {
	d := server.DefaultOptions()
	return &flags{
		cfgPath:       fs.String("config", "", "configuration file (docs/configuration.md; default: every default)"),
		kubeconfig:    fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, or $KUBECONFIG)"),
		namespace:     fs.String("namespace", envOr("POD_NAMESPACE", d.Namespace), "the server's namespace (policy ConfigMaps, certificate Secret)"),
		port:          fs.Int("port", d.Port, "webhook server port (HTTPS)"),
		metricsAddr:   fs.String("metrics-bind-address", d.MetricsAddr, "Prometheus metrics address (0 disables)"),
		probeAddr:     fs.String("health-probe-bind-address", d.ProbeAddr, "/healthz and /readyz address"),
		certDir:       fs.String("cert-dir", "", "directory with tls.crt and tls.key (cert-manager); empty: self-managed CA in --cert-secret"),
		certSecret:    fs.String("cert-secret", d.CertSecret, "Secret holding the self-managed CA and serving certificate"),
		service:       fs.String("service-name", "gpuadmit-webhook", "the webhook Service (the certificate's DNS names)"),
		certIPs:       fs.String("cert-ips", "", "comma-separated IP addresses the self-managed serving certificate also covers (a webhook reached by URL)"),
		certCheck:     fs.Duration("cert-check-interval", d.CertCheckEvery, "how often the self-managed certificate Secret is checked (renewals by other replicas are served within this)"),
		mutating:      fs.String("mutating-webhook-configuration", d.MutatingWebhook, "MutatingWebhookConfiguration whose caBundle is kept current"),
		validating:    fs.String("validating-webhook-configuration", d.ValidatingWebhook, "ValidatingWebhookConfiguration whose caBundle is kept current"),
		replica:       fs.String("replica-name", envOr("POD_NAME", ""), "this replica's name: the writer of its reservations and its progress Lease (default: $POD_NAME, else the host name)"),
		advertise:     fs.String("advertise-address", "", "host:port where the other replicas reach this one (reviews of GPU pods are forwarded to the replica that owns their namespace); default $POD_IP and --port when POD_IP is set; empty: no forwarding"),
		tlsMin:        fs.String("tls-min-version", "1.3", "lowest TLS version of the webhook and metrics servers: 1.3 or 1.2"),
		clientCA:      fs.String("client-ca-file", "", "PEM file of the CA that signs the API server's client certificate: when set, every connection to the webhook port must present that certificate (or the replicas' shared serving certificate); re-read when it changes"),
		clientCNs:     fs.String("client-cn-name", "kube-apiserver", "comma-separated common names accepted from --client-ca-file (empty: any certificate it signed)"),
		metricsSecure: fs.Bool("metrics-secure", true, "serve /metrics over HTTPS to clients whose bearer token the API server authorizes for GET /metrics; false serves plain HTTP to anyone"),
		drainFor:      fs.Duration("shutdown-delay", 5*time.Second, "on SIGTERM, fail readiness and keep serving this long before stopping, so that traffic moves to other replicas first"),
		verbosity:     fs.Int("v", 0, "log verbosity"),
		version:       fs.Bool("version", false, "print the version and commit, and exit"),
	}
}

// run parses args, wires the server and runs it until ctx is done. It
// returns the process exit code: 0 after a clean shutdown, 1 on a runtime
// failure, 2 on bad flags or configuration.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := newFlags(fs)
	withTestHooks := func(*server.Options, *rest.Config) {}
	if testHooks != nil {
		withTestHooks = testHooks(fs)
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "webhook: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *f.version {
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(*f.verbosity), textlogger.Output(stderr)))
	ctrllog.SetLogger(log)
	opts, restCfg, err := f.options(log)
	if err != nil {
		fmt.Fprintf(stderr, "webhook: %v\n", err)
		return 2
	}
	if err := readHAMiConfigMap(ctx, opts.Config, opts.Namespace, restCfg, log); err != nil {
		fmt.Fprintf(stderr, "webhook: %v\n", err)
		return 2
	}
	withTestHooks(&opts, restCfg)
	srv, err := server.New(restCfg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "webhook: %v\n", err)
		return 2
	}
	var resources, families []string
	for _, f := range config.Families(opts.Config) {
		families = append(families, f.Name)
		for _, r := range []corev1.ResourceName{f.Names.Count, f.Names.Memory, f.Names.MemoryPercentage, f.Names.Cores} {
			if r != "" {
				resources = append(resources, string(r))
			}
		}
	}
	log.Info("starting", "version", opts.Version, "commit", opts.Revision, "namespace", opts.Namespace, "port", opts.Port, "policySelector", *opts.Config.Policy.ConfigMapSelector,
		"selfManagedCerts", opts.CertDir == "", "families", strings.Join(families, ","), "resources", strings.Join(resources, ","))
	return serve(ctx, srv, *f.drainFor, log)
}

// serve runs srv until ctx is done. On SIGTERM it fails readiness at once,
// keeps answering for drainFor (the Service and the API server move to
// other replicas), then stops gracefully (reviews in flight are answered).
func serve(ctx context.Context, srv *server.Server, drainFor time.Duration, log logr.Logger) int {
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	go func() {
		<-ctx.Done()
		log.Info("draining", "for", drainFor)
		srv.Drain()
		time.Sleep(drainFor)
		stopRun()
	}()
	if err := srv.Start(runCtx); err != nil {
		log.Error(err, "webhook server stopped")
		return 1
	}
	log.Info("stopped")
	return 0
}

// options are the server's options and API server client configuration
// the parsed flags give.
func (f *flags) options(log logr.Logger) (server.Options, *rest.Config, error) {
	cfg := config.Default()
	if *f.cfgPath != "" {
		var ignored []string
		var err error
		if cfg, ignored, err = config.Load(*f.cfgPath); err != nil {
			return server.Options{}, nil, err
		}
		if w := config.IgnoredWarning(ignored); w != "" {
			log.Info(w, "config", *f.cfgPath)
		}
		if w := config.SwitchedOffWarning(cfg); w != "" {
			log.Info(w, "config", *f.cfgPath)
		}
	}
	restCfg, err := ctrl.GetConfig()
	if *f.kubeconfig != "" {
		restCfg, err = clientcmd.BuildConfigFromFlags("", *f.kubeconfig)
	}
	if err != nil {
		return server.Options{}, nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	ips, err := parseIPs(*f.certIPs)
	if err != nil {
		return server.Options{}, nil, err
	}
	advertise := *f.advertise
	if advertise == "" && os.Getenv("POD_IP") != "" {
		advertise = net.JoinHostPort(os.Getenv("POD_IP"), strconv.Itoa(*f.port))
	}
	if advertise != "" {
		if _, _, err := net.SplitHostPort(advertise); err != nil {
			return server.Options{}, nil, fmt.Errorf("--advertise-address: %w", err)
		}
	}
	minTLS, ok := map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}[*f.tlsMin]
	if !ok {
		return server.Options{}, nil, fmt.Errorf("--tls-min-version: %q is not 1.2 or 1.3", *f.tlsMin)
	}
	svc := *f.service + "." + *f.namespace + ".svc"
	return server.Options{
		TLSMinVersion: minTLS, ClientCAFile: *f.clientCA, ClientCommonNames: splitList(*f.clientCNs), MetricsInsecure: !*f.metricsSecure,
		Config: cfg, Namespace: *f.namespace, Port: *f.port, MetricsAddr: *f.metricsAddr, ProbeAddr: *f.probeAddr,
		Registry: ctrlmetrics.Registry, CertDir: *f.certDir, CertSecret: *f.certSecret,
		CertDNSNames: []string{svc, svc + ".cluster.local", *f.service + "." + *f.namespace, *f.service},
		CertIPs:      ips, CertCheckEvery: *f.certCheck,
		MutatingWebhook: *f.mutating, ValidatingWebhook: *f.validating, Log: log,
		Replica: *f.replica, AdvertiseAddress: advertise, Version: version, Revision: commit,
	}, restCfg, nil
}

// parseIPs reads --cert-ips.
func parseIPs(list string) ([]net.IP, error) {
	ips := []net.IP{}
	for _, s := range splitList(list) {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("--cert-ips: %q is not an IP address", s)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// splitList reads a comma-separated list, leaving out empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
