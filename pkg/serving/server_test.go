package serving_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuadmit/gpuadmit/pkg/certs"
	"github.com/gpuadmit/gpuadmit/pkg/serving"
)

const peerHeader = "X-Test-Forwarded"

// fixture is a running server and the certificates around it.
type fixture struct {
	srv     *serving.Server
	reg     *prometheus.Registry
	addr    string
	serving *certs.Bundle // the replicas' shared certificate
	client  *certs.Bundle // the CA of the API server's client certificate
	caFile  string
	blocked atomic.Int64 // requests waiting in the handler of /block
}

// option changes the server's options before it starts.
type option func(*serving.Options, *fixture)

// withClientCA turns client authentication on, accepting common names cns.
func withClientCA(cns ...string) option {
	return func(o *serving.Options, f *fixture) {
		o.Clients = serving.Clients{CAFile: f.caFile, CommonNames: cns, ReloadEvery: 50 * time.Millisecond}
	}
}

func withLimits(l serving.Limits) option {
	return func(o *serving.Options, _ *fixture) { o.Limits = l }
}

// start runs a server whose handler answers with the body's length; a
// request to /block waits until release is closed.
func start(t *testing.T, release chan struct{}, opts ...option) *fixture {
	t.Helper()
	f := &fixture{reg: prometheus.NewRegistry()}
	var err error
	if f.serving, err = certs.Generate([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), time.Hour, time.Hour); err != nil {
		t.Fatal(err)
	}
	if f.client, err = certs.Generate([]string{"client-ca"}, nil, time.Now(), time.Hour, time.Hour); err != nil {
		t.Fatal(err)
	}
	f.caFile = filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(f.caFile, f.client.CACert, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	o := serving.Options{Host: "127.0.0.1", Port: port, PeerHeader: peerHeader, Registry: f.reg,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return f.serving.Certificate(), nil }}
	for _, opt := range opts {
		opt(&o, f)
	}
	if f.srv, err = serving.New(o); err != nil {
		t.Fatal(err)
	}
	f.srv.Register("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			f.blocked.Add(1)
			<-release
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d replica=%v", len(b), f.srv.FromReplica(r))
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	f.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitFor(t, "the server started", func() bool { return f.srv.StartedChecker()(nil) == nil })
	return f
}

// waitFor polls cond until it holds, failing the test after a generous
// ceiling (what is asserted is the condition, not how long it took).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clientCert is the certificate a client presents (nil: none).
type clientCert func(f *fixture) *tls.Certificate

func noCert(*fixture) *tls.Certificate { return nil }

func replicaCert(f *fixture) *tls.Certificate { return f.serving.Certificate() }

// signedBy returns a client certificate for cn from the client CA (or,
// with foreign, from a CA nobody trusts).
func signedBy(cn string, foreign bool) clientCert {
	return func(f *fixture) *tls.Certificate {
		ca := f.client
		if foreign {
			var err error
			if ca, err = certs.Generate([]string{"other-ca"}, nil, time.Now(), time.Hour, time.Hour); err != nil {
				panic(err)
			}
		}
		c, k, err := ca.ClientCertificate(cn, time.Now(), time.Hour)
		if err != nil {
			panic(err)
		}
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			panic(err)
		}
		return &pair
	}
}

// httpClient trusts the serving CA and presents cert; local binds its
// connections to that loopback address ("" for any).
func (f *fixture) httpClient(cert *tls.Certificate, local string) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.serving.CACert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DialContext: d.DialContext}}
}

// post sends body to path with the given headers and returns the status
// and the answer, or the error of the exchange.
func (f *fixture) post(c *http.Client, path, body string, header map[string]string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, "https://"+f.addr+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// refused reads gpuadmit_webhook_refused_total{reason}.
func refused(t *testing.T, f *fixture, reason string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "gpuadmit_webhook_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
