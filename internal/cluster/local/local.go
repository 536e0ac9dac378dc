package local

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpuadmit/gpuadmit/pkg/certs"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// Namespace is the webhook's own namespace in the local cluster.
const Namespace = "gpuadmit-system"

// Cluster is a running control plane and, between StartWebhook and
// StopWebhook, a running webhook server.
type Cluster struct {
	Config     *rest.Config
	Kube       kubernetes.Interface
	Assets     string
	Kubeconfig string
	// Server is the running webhook server (nil when stopped).
	Server *server.Server
	Port   int

	// ClientCA signs the API server's client certificate and ClientCAFile
	// holds its CA (Config.APIServerClientCert; nil otherwise).
	ClientCA     *certs.Bundle
	ClientCAFile string

	env      *envtest.Environment
	dir      string
	manifest string
	cancel   context.CancelFunc
	done     chan error
	kcm      *controllerManager
	// clock is Config.Clock.
	clock clock.WithTicker
}

// Start starts kube-apiserver and etcd from assets (a bin/k8s-* directory)
// and installs the webhook configurations of manifestsDir/webhooks.yaml
// pointing at a local port chosen now.
func Start(ctx context.Context, assets, manifestsDir string) (*Cluster, error) {
	return StartWith(ctx, Config{Assets: assets, Manifests: manifestsDir})
}

// Config says how StartWith starts a control plane.
type Config struct {
	// Assets is a bin/k8s-* directory; Manifests the webhook kustomize base.
	Assets, Manifests string
	// APIServerClientCert: the API server presents a client certificate
	// (common name kube-apiserver, signed by Cluster.ClientCA) to the
	// webhook, through its AdmissionConfiguration's kubeConfigFile, as a
	// cluster set up for gpuadmit's client authentication does.
	APIServerClientCert bool
	// ControllerManager runs kube-controller-manager (from Assets) against
	// the API server, so that Deployments, ReplicaSets, StatefulSets, Jobs
	// and CronJobs make their pods through the webhooks as in a real
	// cluster (controllermanager.go).
	ControllerManager bool
	// Clock is the webhook's clock in Options (nil: the real clock): a
	// suite steps a fake clock to run its pods for simulated hours (the
	// budgets' burn, windows and checkpoints).
	Clock clock.WithTicker
}

// StartWith starts a control plane as cfg says.
func StartWith(ctx context.Context, cfg Config) (*Cluster, error) {
	assets, manifestsDir := cfg.Assets, cfg.Manifests
	c := &Cluster{Assets: assets, manifest: filepath.Join(manifestsDir, "webhooks.yaml"), clock: cfg.Clock,
		env: &envtest.Environment{BinaryAssetsDirectory: assets,
			CRDDirectoryPaths: []string{filepath.Join(filepath.Dir(manifestsDir), "crd")}, ErrorIfCRDPathMissing: true}}
	var err error
	if c.dir, err = os.MkdirTemp("", "gpuadmit-local-cluster-"); err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	// A certificate directory of our own survives RestartAPIServer, so the
	// restarted API server keeps its serving CA and every client stays valid.
	certDir := filepath.Join(c.dir, "kube-apiserver")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate dir: %w", err)
	}
	c.env.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir}
	servePodGroups(c.env.ControlPlane.APIServer)
	if c.Port, err = freePort(); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, err
	}
	if cfg.APIServerClientCert {
		if err := c.presentClientCert(); err != nil {
			_ = os.RemoveAll(c.dir)
			return nil, err
		}
	}
	rest, err := c.env.Start()
	if err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	c.Config = rest
	if err := c.setUp(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if cfg.ControllerManager {
		if err := c.startControllerManager(ctx); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	return c, nil
}

// servePodGroups makes the API server serve the PodGroup API
// (scheduling.k8s.io/v1beta1, beta and off by default in Kubernetes 1.37)
// and keep pods' spec.schedulingGroup, both behind the GenericWorkload
// feature gate, as a cluster running gang scheduling does.
func servePodGroups(api *envtest.APIServer) {
	args := api.Configure()
	args.Set("runtime-config", "scheduling.k8s.io/v1beta1=true")
	args.Set("feature-gates", "GenericWorkload=true")
}

func (c *Cluster) setUp(ctx context.Context) error {
	var err error
	if c.Kube, err = kubernetes.NewForConfig(c.Config); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := WriteAdminKubeconfig(c.env, c.Kubeconfig); err != nil {
		return err
	}
	if err := c.CreateNamespace(ctx, Namespace, nil); err != nil {
		return err
	}
	return c.installWebhooks(ctx)
}

// Options returns the server options the suites and the demo run with:
// cmd/webhook's defaults, on 127.0.0.1:Port, without metrics and probe
// listeners, with a fresh metrics registry, on Config.Clock.
func (c *Cluster) Options() server.Options {
	return server.Options{
		Config:            config.Default(),
		Namespace:         Namespace,
		Host:              "127.0.0.1",
		Port:              c.Port,
		MetricsAddr:       "0",
		ProbeAddr:         "0",
		CertIPs:           []net.IP{net.IPv4(127, 0, 0, 1)},
		CertDNSNames:      []string{"localhost"},
		MutatingWebhook:   "gpuadmit",
		ValidatingWebhook: "gpuadmit",
		// net/http's graceful shutdown waits up to 5 s for connections the
		// API server opened but has not sent a review on yet.
		ShutdownTimeout: 10 * time.Second,
		Replica:         "local",
		Log:             logr.Discard(),
		Clock:           c.clock,
	}
}

// StartWebhook starts a webhook server with opts and waits until it is
// ready (informers synced, policy active, caBundle patched) and its port
// answers TLS.
func (c *Cluster) StartWebhook(ctx context.Context, opts server.Options) error {
	return c.StartWebhookRun(ctx, WebhookRun{Options: opts})
}

// WebhookRun is how StartWebhookRun starts a webhook server.
type WebhookRun struct {
	Options server.Options
	// Config is the server's connection to the API server (default the
	// cluster's; a fault test passes one through a proxy).
	Config *rest.Config
	// Extra handlers on the webhook server (a benchmark's floor handler).
	Extra map[string]http.Handler
	// NoWait returns as soon as the server runs, before it is ready (a
	// cold-start test hammers it meanwhile).
	NoWait bool
}

// StartWebhookRun starts a webhook server as run says.
func (c *Cluster) StartWebhookRun(ctx context.Context, run WebhookRun) error {
	if c.Server != nil {
		return errors.New("a webhook server is already running")
	}
	cfg := run.Config
	if cfg == nil {
		cfg = c.Config
	}
	srv, err := server.New(cfg, run.Options)
	if err != nil {
		return err
	}
	for path, h := range run.Extra {
		srv.Register(path, h)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Start(runCtx) }()
	c.Server, c.cancel, c.done = srv, cancel, done
	if run.NoWait {
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := srv.NotReady()
		if ready == nil {
			ready = dialTLS(c.Port)
		}
		if ready == nil {
			return nil
		}
		select {
		case err := <-done:
			c.Server, c.cancel = nil, nil
			cancel()
			return fmt.Errorf("webhook server exited before it was ready: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server not ready after 60s: %w", errors.Join(ready, c.StopWebhook()))
		}
	}
}

// StopWebhook cancels the webhook server and waits for it to stop.
func (c *Cluster) StopWebhook() error {
	if c.Server == nil {
		return nil
	}
	c.cancel()
	err := <-c.done
	c.Server, c.cancel, c.done = nil, nil, nil
	return err
}

// Stop stops kube-controller-manager, the webhook server, then the
// control plane.
func (c *Cluster) Stop() error {
	err := errors.Join(c.stopControllerManager(), c.StopWebhook())
	err = errors.Join(err, c.env.Stop())
	if c.dir != "" {
		err = errors.Join(err, os.RemoveAll(c.dir))
	}
	return err
}

// RestartAPIServer kills kube-apiserver (SIGKILL: a crash, which also
// cuts every watch at once; a graceful stop waits a minute for open
// watches) and starts it again on the same port with the same
// certificates. etcd keeps running: nothing is lost.
func (c *Cluster) RestartAPIServer() error {
	api := c.env.ControlPlane.APIServer
	pid, err := pidWithArg("--cert-dir=" + api.CertDir)
	if err != nil {
		return fmt.Errorf("finding kube-apiserver: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver: %w", err)
	}
	if err := api.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// pidWithArg finds the process whose command line holds arg.
func pidWithArg(arg string) (int, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process with argument %s", arg)
}

// Kubectl runs the kubectl built from source against the cluster.
func (c *Cluster) Kubectl(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(c.Assets, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// CreateNamespace creates a namespace with labels.
func (c *Cluster) CreateNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// dialTLS checks that the webhook port completes a TLS handshake.
func dialTLS(port int) error {
	d := &net.Dialer{Timeout: time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // readiness probe only
	if err != nil {
		return fmt.Errorf("webhook port %d: %w", port, err)
	}
	return conn.Close()
}

// WriteAdminKubeconfig adds a system:masters user to env and writes a
// kubeconfig for it to path, for kubectl and helm.
func WriteAdminKubeconfig(env *envtest.Environment, path string) error {
	return writeUserKubeconfig(env, envtest.User{Name: "admin", Groups: []string{"system:masters"}}, path)
}
