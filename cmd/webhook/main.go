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

	"k8s.io/utils/clock"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run parses args, wires the server and runs it until ctx is done. It
// returns the process exit code: 0 after a clean shutdown, 1 on a runtime
// failure, 2 on bad flags or configuration.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath     = fs.String("config", "", "configuration file (docs/configuration.md; default: every default)")
		kubeconfig  = fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, or $KUBECONFIG)")
		namespace   = fs.String("namespace", envOr("POD_NAMESPACE", "gpuadmit-system"), "the server's namespace (policy ConfigMaps, certificate Secret)")
		port        = fs.Int("port", 9443, "webhook server port (HTTPS, TLS 1.2+)")
		metricsAddr = fs.String("metrics-bind-address", ":8080", "Prometheus metrics address (0 disables)")
		probeAddr   = fs.String("health-probe-bind-address", ":8081", "/healthz and /readyz address")
		certDir     = fs.String("cert-dir", "", "directory with tls.crt and tls.key (cert-manager); empty: self-managed CA in --cert-secret")
		certSecret  = fs.String("cert-secret", "gpuadmit-webhook-tls", "Secret holding the self-managed CA and serving certificate")
		service     = fs.String("service-name", "gpuadmit-webhook", "the webhook Service (the certificate's DNS names)")
		certIPs     = fs.String("cert-ips", "", "comma-separated IP addresses the self-managed serving certificate also covers (a webhook reached by URL)")
		certCheck   = fs.Duration("cert-check-interval", 10*time.Second, "how often the self-managed certificate Secret is checked (renewals by other replicas are served within this)")
		mutating    = fs.String("mutating-webhook-configuration", "gpuadmit", "MutatingWebhookConfiguration whose caBundle is kept current")
		validating  = fs.String("validating-webhook-configuration", "gpuadmit", "ValidatingWebhookConfiguration whose caBundle is kept current")
		replica     = fs.String("replica-name", envOr("POD_NAME", ""), "this replica's name: the writer of its reservations and its progress Lease (default: $POD_NAME, else the host name)")
		advertise   = fs.String("advertise-address", "", "host:port where the other replicas reach this one (reviews of GPU pods are forwarded to the replica that owns their namespace); default $POD_IP and --port when POD_IP is set; empty: no forwarding")
		tlsMin      = fs.String("tls-min-version", "1.3", "lowest TLS version of the webhook and metrics servers: 1.3 or 1.2")
		clientCA    = fs.String("client-ca-file", "", "PEM file of the CA that signs the API server's client certificate: when set, every connection to the webhook port must present that certificate (or the replicas' shared serving certificate); re-read when it changes")
		clientCNs   = fs.String("client-cn-name", "kube-apiserver", "comma-separated common names accepted from --client-ca-file (empty: any certificate it signed)")
		metricsSec  = fs.Bool("metrics-secure", true, "serve /metrics over HTTPS to clients whose bearer token the API server authorizes for GET /metrics; false serves plain HTTP to anyone")
		drainFor    = fs.Duration("shutdown-delay", 5*time.Second, "on SIGTERM, fail readiness and keep serving this long before stopping, so that traffic moves to other replicas first")
		watchDelay  = fs.Duration("test-watch-delay", 0, "fault injection for tests: hold every watch event back this long")
		clockSkew   = fs.Duration("test-clock-skew", 0, "fault injection for tests: run this replica's clock this far ahead")
		verbosity   = fs.Int("v", 0, "log verbosity")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "webhook: unexpected arguments %q\n", fs.Args())
		return 2
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(*verbosity), textlogger.Output(stderr)))
	ctrllog.SetLogger(log)
	cfg := config.Default()
	if *cfgPath != "" {
		var ignored []string
		var err error
		if cfg, ignored, err = config.Load(*cfgPath); err != nil {
			fmt.Fprintf(stderr, "webhook: %v\n", err)
			return 2
		}
		if w := config.IgnoredWarning(ignored); w != "" {
			log.Info(w, "config", *cfgPath)
		}
	}
	restCfg, err := ctrl.GetConfig()
	if *kubeconfig != "" {
		restCfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "webhook: kubernetes client configuration: %v\n", err)
		return 2
	}
	svc := *service + "." + *namespace + ".svc"
	ips := []net.IP{}
	for _, s := range strings.Split(*certIPs, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		ip := net.ParseIP(s)
		if ip == nil {
			fmt.Fprintf(stderr, "webhook: --cert-ips: %q is not an IP address\n", s)
			return 2
		}
		ips = append(ips, ip)
	}
	if *advertise == "" && os.Getenv("POD_IP") != "" {
		*advertise = net.JoinHostPort(os.Getenv("POD_IP"), strconv.Itoa(*port))
	}
	if *advertise != "" {
		if _, _, err := net.SplitHostPort(*advertise); err != nil {
			fmt.Fprintf(stderr, "webhook: --advertise-address: %v\n", err)
			return 2
		}
	}
	minTLS, ok := map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}[*tlsMin]
	if !ok {
		fmt.Fprintf(stderr, "webhook: --tls-min-version: %q is not 1.2 or 1.3\n", *tlsMin)
		return 2
	}
	srv, err := server.New(restCfg, server.Options{
		TLSMinVersion: minTLS, ClientCAFile: *clientCA, ClientCommonNames: splitList(*clientCNs), MetricsInsecure: !*metricsSec,
		Config: cfg, Namespace: *namespace, Port: *port, MetricsAddr: *metricsAddr, ProbeAddr: *probeAddr,
		Registry: ctrlmetrics.Registry, CertDir: *certDir, CertSecret: *certSecret,
		CertDNSNames: []string{svc, svc + ".cluster.local", *service + "." + *namespace, *service},
		CertIPs:      ips, CertCheckEvery: *certCheck,
		MutatingWebhook: *mutating, ValidatingWebhook: *validating, Log: log,
		Replica: *replica, AdvertiseAddress: *advertise, WatchDelay: *watchDelay, Clock: skewedClock(*clockSkew),
	})
	if err != nil {
		fmt.Fprintf(stderr, "webhook: %v\n", err)
		return 2
	}
	n := cfg.Devices.Names
	log.Info("starting", "namespace", *namespace, "port", *port, "policySelector", cfg.Policy.ConfigMapSelector,
		"selfManagedCerts", *certDir == "", "resources", strings.Join([]string{string(n.Count), string(n.Memory),
			string(n.MemoryPercentage), string(n.Cores)}, ","))
	// On SIGTERM: fail readiness at once, keep answering for the shutdown
	// delay (the Service and the API server move to other replicas), then
	// stop gracefully (reviews in flight are answered).
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	go func() {
		<-ctx.Done()
		log.Info("draining", "for", *drainFor)
		srv.Drain()
		time.Sleep(*drainFor)
		stopRun()
	}()
	if err := srv.Start(runCtx); err != nil {
		log.Error(err, "webhook server stopped")
		return 1
	}
	log.Info("stopped")
	return 0
}

// skewedClock is the wall clock moved by skew (nil for none).
func skewedClock(skew time.Duration) clock.PassiveClock {
	if skew == 0 {
		return nil
	}
	return skewed(skew)
}

type skewed time.Duration

func (s skewed) Now() time.Time { return time.Now().Add(time.Duration(s)) }

func (s skewed) Since(t time.Time) time.Duration { return s.Now().Sub(t) }

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
