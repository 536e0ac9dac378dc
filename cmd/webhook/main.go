// Command webhook is gpuadmit's admission webhook server: it parses flags
// and runs the wiring of pkg/server (mutating /mutate-pods, validating
// /validate-pods, /healthz and /readyz on the probe address, Prometheus
// metrics on the metrics address) until SIGTERM or SIGINT, then shuts down
// gracefully.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

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
		cfgPath     = fs.String("config", "", "gpuadmit/HAMi device config file (default: HAMi's defaults)")
		namespace   = fs.String("namespace", envOr("POD_NAMESPACE", "gpuadmit-system"), "the server's namespace (policy ConfigMaps, certificate Secret)")
		policyDir   = fs.String("policy-dir", "", "directory of extra Rego policies (and their tests) added to the built-in ones")
		policySel   = fs.String("policy-configmap-selector", "gpuadmit.io/policy=true", "label selector of policy ConfigMaps in --namespace (empty: none)")
		confirm     = fs.Duration("reservation-confirm-after", 5*time.Second, "how long after admitting a pod its reservation is first checked against the API server (a reservation ends only when the watch records the pod or a read confirms it does not exist)")
		staleFeed   = fs.String("stale-feed", server.StaleFeedReservations, "while a watch is stale: Reservations (keep deciding; admitted pods stay reserved until seen) or Deny (refuse GPU pods, fail readiness)")
		port        = fs.Int("port", 9443, "webhook server port (HTTPS, TLS 1.2+)")
		metricsAddr = fs.String("metrics-bind-address", ":8080", "Prometheus metrics address (0 disables)")
		probeAddr   = fs.String("health-probe-bind-address", ":8081", "/healthz and /readyz address")
		certDir     = fs.String("cert-dir", "", "directory with tls.crt and tls.key (cert-manager); empty: self-managed CA in --cert-secret")
		certSecret  = fs.String("cert-secret", "gpuadmit-webhook-tls", "Secret holding the self-managed CA and serving certificate")
		service     = fs.String("service-name", "gpuadmit-webhook", "the webhook Service (the certificate's DNS names)")
		mutating    = fs.String("mutating-webhook-configuration", "gpuadmit", "MutatingWebhookConfiguration whose caBundle is kept current")
		validating  = fs.String("validating-webhook-configuration", "gpuadmit", "ValidatingWebhookConfiguration whose caBundle is kept current")
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
	if err != nil {
		fmt.Fprintf(stderr, "webhook: kubernetes client configuration: %v\n", err)
		return 2
	}
	svc := *service + "." + *namespace + ".svc"
	srv, err := server.New(restCfg, server.Options{
		Settings: cfg.NVIDIA, Namespace: *namespace, PolicyDir: *policyDir, PolicySelector: *policySel,
		ConfirmAfter: *confirm, StaleFeed: *staleFeed, Port: *port, MetricsAddr: *metricsAddr, ProbeAddr: *probeAddr,
		Registry: ctrlmetrics.Registry, CertDir: *certDir, CertSecret: *certSecret,
		CertDNSNames:    []string{svc, svc + ".cluster.local", *service + "." + *namespace, *service},
		CertIPs:         []net.IP{},
		MutatingWebhook: *mutating, ValidatingWebhook: *validating, Log: log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "webhook: %v\n", err)
		return 2
	}
	log.Info("starting", "namespace", *namespace, "port", *port, "policySelector", *policySel,
		"selfManagedCerts", *certDir == "", "resources", strings.Join([]string{string(cfg.NVIDIA.Names.Count),
			string(cfg.NVIDIA.Names.Memory), string(cfg.NVIDIA.Names.MemoryPercentage), string(cfg.NVIDIA.Names.Cores)}, ","))
	if err := srv.Start(ctx); err != nil {
		log.Error(err, "webhook server stopped")
		return 1
	}
	log.Info("stopped")
	return 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
