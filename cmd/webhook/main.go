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
	if *kubeconfig != "" {
		restCfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "webhook: kubernetes client configuration: %v\n", err)
		return 2
	}
	svc := *service + "." + *namespace + ".svc"
	srv, err := server.New(restCfg, server.Options{
		Config: cfg, Namespace: *namespace, Port: *port, MetricsAddr: *metricsAddr, ProbeAddr: *probeAddr,
		Registry: ctrlmetrics.Registry, CertDir: *certDir, CertSecret: *certSecret,
		CertDNSNames:    []string{svc, svc + ".cluster.local", *service + "." + *namespace, *service},
		CertIPs:         []net.IP{},
		MutatingWebhook: *mutating, ValidatingWebhook: *validating, Log: log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "webhook: %v\n", err)
		return 2
	}
	n := cfg.Devices.Names
	log.Info("starting", "namespace", *namespace, "port", *port, "policySelector", cfg.Policy.ConfigMapSelector,
		"selfManagedCerts", *certDir == "", "resources", strings.Join([]string{string(n.Count), string(n.Memory),
			string(n.MemoryPercentage), string(n.Cores)}, ","))
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
