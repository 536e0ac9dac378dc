package security_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/certs"
	"github.com/gpuadmit/gpuadmit/pkg/forward"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// clientPair is a client certificate for cn signed by ca.
func clientPair(t *testing.T, ca *certs.Bundle, cn string) *tls.Certificate {
	t.Helper()
	c, k, err := ca.ClientCertificate(cn, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return &pair
}

// TestOnlyTheAPIServerMayReview: with client authentication on, the real
// API server (presenting its client certificate through its
// AdmissionConfiguration) gets its reviews decided, and a client posting a
// review straight to the port fails at the TLS handshake, whatever
// certificate it presents, and reserves nothing.
func TestOnlyTheAPIServerMayReview(t *testing.T) {
	c := local.ForTestWith(t, local.Config{Manifests: manifests, APIServerClientCert: true}, func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.ClientCAFile, o.ClientCommonNames = c.ClientCAFile, []string{local.APIServerCommonName}
		return &o
	})
	ctx := t.Context()
	seed(t, c, "team-a", 4096)
	if err := createPod(ctx, c, creates.GPUPod("team-a", "fits", "", 2048)); err != nil {
		t.Fatalf("a pod that fits, through the API server: %v", err)
	}
	err := createPod(ctx, c, creates.GPUPod("team-a", "too-big", "", 4096))
	if err == nil || !strings.Contains(err.Error(), "validate.gpuadmit.io") || !strings.Contains(err.Error(), "limit 4096 MiB") {
		t.Fatalf("a pod over the limit, through the API server: %v; want gpuadmit's denial", err)
	}
	other, err := certs.Generate([]string{"attacker-ca"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		name string
		cert *tls.Certificate
	}{
		{"no client certificate", nil},
		{"the API server's name from another CA", clientPair(t, other, local.APIServerCommonName)},
		{"another name from the client CA", clientPair(t, c.ClientCA, "system:node:attacker")},
		{"another CA's serving certificate", other.Certificate()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			uid := fmt.Sprint("forged-", i)
			status, body, err := post(ctx, attacker(tt.cert, ""), c, forgedReview("team-a", "ghost-"+uid, uid, 2048), nil)
			if err == nil || !strings.Contains(err.Error(), "tls") {
				t.Fatalf("a direct review got status %d %q, error %v; want a TLS handshake error", status, body, err)
			}
			time.Sleep(100 * time.Millisecond)
			if u, _ := usage(ctx, t, c, "team-a"); reserved(u, uid) {
				t.Fatalf("a refused review reserved: %+v", u.Status.Reservations)
			}
		})
	}
}

// TestForwardedHeaderNeedsTheReplicasCertificate: without client
// authentication anyone may post a review (the NetworkPolicy and mutual
// TLS are what keep them out), but the header that marks a review a
// replica forwarded is refused from a client without the replicas'
// certificate, before any decision.
func TestForwardedHeaderNeedsTheReplicasCertificate(t *testing.T) {
	c := local.ForTest(t, manifests, local.DefaultWebhook)
	ctx := t.Context()
	seed(t, c, "team-b", 4096)
	status, body, err := post(ctx, attacker(nil, ""), c, forgedReview("team-b", "ghost-f", "forwarded", 1024), map[string]string{forward.Header: "1"})
	if err != nil || status != 403 || !strings.Contains(body, "accepted only from a replica") {
		t.Fatalf("forwarded review from an attacker: %d %q %v; want 403", status, body, err)
	}
	// The same review without the header is decided and reserved: what
	// client authentication (TestOnlyTheAPIServerMayReview) prevents, and
	// what the flood tests bound.
	status, body, err = post(ctx, attacker(nil, ""), c, forgedReview("team-b", "ghost-p", "plain", 1024), nil)
	if ok, msg := reviewAllowed(body); err != nil || status != 200 || !ok {
		t.Fatalf("plain forged review: %d %q %v (%s)", status, body, err, msg)
	}
	u, _ := usage(ctx, t, c, "team-b")
	if reserved(u, "forwarded") || !reserved(u, "plain") {
		t.Fatalf("reservations %+v: want the plain review's alone", u.Status.Reservations)
	}
}

// TestMetricsNeedAnAuthorizedToken: /metrics (every namespace's limits and
// usage) is served over HTTPS to a bearer token the API server
// authenticates and authorizes for GET /metrics: no token gets 401, a
// ServiceAccount without the permission 403, the reader's token the
// metrics.
func TestMetricsNeedAnAuthorizedToken(t *testing.T) {
	port := freePort(t)
	c := local.ForTest(t, manifests, func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", port)
		return &o
	})
	ctx := t.Context()
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	reader, err := c.MetricsToken(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := c.MetricsToken(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, token string
		status      int
		body        string
	}{
		{"no token", "", 401, "Unauthorized"},
		{"a ServiceAccount without the permission", stranger, 403, "Authorization denied"},
		{"the metrics reader", reader, 200, "# TYPE "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body, err := local.Scrape(ctx, url, tt.token)
			if err != nil || status != tt.status || !strings.Contains(body, tt.body) {
				t.Fatalf("status %d, error %v, body %.200q; want %d with %q", status, err, body, tt.status, tt.body)
			}
		})
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
