package replicas

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/cluster/tcpproxy"
	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/pkg/certs"
)

// Options configure a Cluster.
type Options struct {
	// Assets is the directory of kube-apiserver, etcd and kubectl;
	// Manifests the webhook kustomize base (its webhooks.yaml is installed).
	Assets, Manifests string
	// Binary is cmd/webhook built (Build).
	Binary string
	// Replicas to start (default 3).
	Replicas int
	// Config is the configuration file's content.
	Config string
	// Dir holds certificates, the configuration and the replicas' logs.
	Dir string
	// Args returns extra flags of replica i.
	Args func(i int) []string
	// SelfManagedCerts: the replicas share a CA and serving certificate
	// through their Secret and patch the caBundles themselves, instead of
	// reading files from --cert-dir.
	SelfManagedCerts bool
	// APIProxies: each replica reaches the API server through a proxy of
	// its own (APIProxy), so that a test can stall or cut one replica's
	// connection alone.
	APIProxies bool
}

// Cluster is a control plane with webhook replicas behind a proxy.
type Cluster struct {
	*local.Cluster
	Proxy    *tcpproxy.Proxy
	Replicas []*Replica
	opts     Options
	// metricsToken is a bearer token allowed to read /metrics.
	metricsToken string
}

// Replica is one webhook process.
type Replica struct {
	Name                 string
	Port, Probe, Metrics int
	// Log is the file the replica writes its log to.
	Log    string
	cmd    *exec.Cmd
	exited chan error
	// api and kubeconfig: its own way to the API server (Options.APIProxies).
	api        *tcpproxy.Proxy
	kubeconfig string
}

// Build compiles cmd/webhook into dir with its test hooks (the build tag
// testhooks.Tag: the fault-injection flags a test passes in Args or to
// StartReplica) and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "webhook")
	out, err := exec.CommandContext(ctx, "go", "build", "-tags", testhooks.Tag, "-o", bin, "github.com/gpuadmit/gpuadmit/cmd/webhook").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building cmd/webhook: %w\n%s", err, out)
	}
	return bin, nil
}

// Start starts the control plane, the proxy on the port the webhook
// configurations name, and the replicas, and waits until all are ready.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Replicas == 0 {
		opts.Replicas = 3
	}
	dc, err := local.Start(ctx, opts.Assets, opts.Manifests)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Cluster: dc, opts: opts}
	if err := c.setUp(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *Cluster) setUp(ctx context.Context) error {
	if !c.opts.SelfManagedCerts {
		if err := c.certFiles(ctx); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(c.opts.Dir, "config.yaml"), []byte(c.opts.Config), 0o600); err != nil {
		return err
	}
	var err error
	backends := make([]tcpproxy.Backend, c.opts.Replicas)
	// taken: a port is free until a replica binds it, so two draws could
	// return the same one (the second replica's metrics server then fails
	// with "address already in use").
	taken := map[int]bool{c.Port: true}
	for i := range c.opts.Replicas {
		r := &Replica{Name: fmt.Sprintf("replica-%d", i), Log: filepath.Join(c.opts.Dir, fmt.Sprintf("replica-%d.log", i))}
		for _, p := range []*int{&r.Port, &r.Probe, &r.Metrics} {
			if *p, err = freePort(taken); err != nil {
				return err
			}
		}
		c.Replicas = append(c.Replicas, r)
		probe := r.Probe
		backends[i] = tcpproxy.Backend{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)), Check: func() error { return ready(probe) }}
	}
	if c.Proxy, err = tcpproxy.New(tcpproxy.Options{Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Backends: backends,
		HealthEvery: 100 * time.Millisecond}); err != nil {
		return err
	}
	if c.opts.APIProxies {
		if err := c.apiProxies(); err != nil {
			return err
		}
	}
	for i := range c.Replicas {
		if err := c.StartReplica(i); err != nil {
			return err
		}
	}
	for i := range c.Replicas {
		if err := c.WaitReady(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// certFiles writes a CA and a serving certificate for 127.0.0.1 for
// --cert-dir, and sets the caBundles.
func (c *Cluster) certFiles(ctx context.Context) error {
	certDir := filepath.Join(c.opts.Dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	b, err := certs.Generate([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), 24*time.Hour, 24*time.Hour)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"tls.crt": b.ServerCert, "tls.key": b.Key} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return err
		}
	}
	return c.SetCABundle(ctx, b.CACert)
}

// StartReplica starts replica i (again) with its flags and extra ones.
func (c *Cluster) StartReplica(i int, extra ...string) error {
	r := c.Replicas[i]
	certArgs := []string{"--cert-dir", filepath.Join(c.opts.Dir, "certs")}
	if c.opts.SelfManagedCerts {
		certArgs = []string{"--cert-ips", "127.0.0.1", "--cert-check-interval", "1s"}
	}
	kubeconfig := c.Kubeconfig
	if r.kubeconfig != "" {
		kubeconfig = r.kubeconfig
	}
	args := append([]string{"--kubeconfig", kubeconfig, "--namespace", local.Namespace,
		"--config", filepath.Join(c.opts.Dir, "config.yaml")}, certArgs...)
	// A stopping replica answers for --shutdown-delay with every answer
	// closing its connection, then closes the idle ones: 4 s lets each
	// pooled connection carry a request first even on a busy 2-core machine
	// (with 2 s, one create failed with EOF in a clean-clone run while other
	// builds shared the cores).
	args = append(args,
		"--port", strconv.Itoa(r.Port), "--health-probe-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Probe)),
		"--metrics-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Metrics)),
		"--replica-name", r.Name, "--shutdown-delay", "4s", "--advertise-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)))
	if c.opts.Args != nil {
		args = append(args, c.opts.Args(i)...)
	}
	args = append(args, extra...)
	log, err := os.OpenFile(r.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting %s: %w", r.Name, err)
	}
	r.cmd, r.exited = cmd, make(chan error, 1)
	go func() { r.exited <- cmd.Wait(); _ = log.Close() }()
	return nil
}

// WaitReady waits until replica i answers /readyz and the proxy's health
// check has put it in rotation (as a Service's endpoints follow a pod's
// readiness: until then a review may find no backend, and its connection
// is closed unanswered).
func (c *Cluster) WaitReady(ctx context.Context, i int) error {
	r := c.Replicas[i]
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ready(r.Probe)
		if err == nil && c.Proxy.Healthy()[i] {
			return nil
		}
		if err == nil {
			err = errors.New("ready, not yet in the proxy's rotation")
		}
		select {
		case e := <-r.exited:
			r.exited <- e
			return exitedEarly(r, e)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 60s: %w (log %s)", r.Name, err, r.Log)
		}
	}
}

// exitedEarly is the error of replica r that exited with e (nil: status 0)
// before it was ready.
func exitedEarly(r *Replica, e error) error {
	if e == nil {
		return fmt.Errorf("%s exited before it was ready: <nil>; the end of its log:\n%s", r.Name, tail(r.Log, 15))
	}
	return fmt.Errorf("%s exited before it was ready: %w; the end of its log:\n%s", r.Name, e, tail(r.Log, 15))
}

// Kill kills replica i (SIGKILL) and waits for it.
func (c *Cluster) Kill(i int) error { return c.signal(i, syscall.SIGKILL) }

// Terminate stops replica i gracefully (SIGTERM: it drains, then stops)
// and waits for it.
func (c *Cluster) Terminate(i int) error { return c.signal(i, syscall.SIGTERM) }

func (c *Cluster) signal(i int, sig syscall.Signal) error {
	r := c.Replicas[i]
	if r.cmd == nil {
		return nil
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case err := <-r.exited:
		// How sig ended it (signal: killed, or its status after the
		// drain) is what was asked for, not a failure.
		_ = err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not exit within 30s of %s", r.Name, sig)
	}
	r.cmd = nil
	return nil
}

// Stop stops every replica, the proxy and the control plane.
func (c *Cluster) Stop() error {
	var err error
	for i := range c.Replicas {
		err = errors.Join(err, c.Kill(i))
	}
	if c.Proxy != nil {
		err = errors.Join(err, c.Proxy.Close())
	}
	for _, r := range c.Replicas {
		if r.api != nil {
			err = errors.Join(err, r.api.Close())
		}
	}
	return errors.Join(err, c.Cluster.Stop())
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// ready checks a replica's /readyz.
func ready(probe int) error {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

// freePort returns a port free on 127.0.0.1 and not in taken (which it
// joins), below Linux's ephemeral range, so that outgoing connections (the
// API server's) do not take it between now and the replica's start.
func freePort(taken map[int]bool) (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if taken[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		taken[port] = true
		return port, nil
	}
	return 0, errors.New("no free port in 20000-32000")
}

// Metric sums the samples of metric name (whose labels contain every
// labels substring) that replica i exposes, scraped as Prometheus does:
// over HTTPS with the token of a ServiceAccount allowed GET /metrics.
func (c *Cluster) Metric(i int, name string, labels ...string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c.metricsToken == "" {
		t, err := c.MetricsToken(ctx, true)
		if err != nil {
			return 0, err
		}
		c.metricsToken = t
	}
	status, body, err := local.Scrape(ctx, fmt.Sprintf("https://127.0.0.1:%d/metrics", c.Replicas[i].Metrics), c.metricsToken)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("scraping %s: status %d: %s", c.Replicas[i].Name, status, body)
	}
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); ok && err == nil {
			sum += v
		}
	}
	return sum, nil
}
