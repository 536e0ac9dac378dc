package forward

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/pkg/certs"
)

func keyPair(t *testing.T) tls.Certificate {
	t.Helper()
	b, err := certs.Generate([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tls.X509KeyPair(b.ServerCert, b.Key)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

const (
	gpuCreate = `{"request":{"uid":"1","namespace":"team-a","operation":"CREATE","object":{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}`
	cpuCreate = `{"request":{"uid":"1","namespace":"team-a","operation":"CREATE","object":{"spec":{"containers":[{"resources":{"limits":{"cpu":"1"}}}]}}}}`
	gpuUpdate = `{"request":{"uid":"1","namespace":"team-a","operation":"UPDATE","object":{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}`
)

// TestForwarding: a pod CREATE's review goes to the namespace's owner when
// the owner serves this replica's own certificate and answers, whatever the
// pod asks for (the handler that decides asks that, once); anything else
// (another certificate, an owner that is not ready or gone, an UPDATE, a
// review already forwarded) is decided here.
func TestForwarding(t *testing.T) {
	mine, other := keyPair(t), keyPair(t)
	var ownerGot atomic.Value
	var presented atomic.Bool // the sender presented the shared certificate as its client certificate
	ownerStatus := atomic.Int64{}
	owner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ownerGot.Store(r.Header.Get(Header))
		presented.Store(r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && string(r.TLS.PeerCertificates[0].Raw) == string(mine.Certificate[0]))
		if code := int(ownerStatus.Load()); code != http.StatusOK {
			http.Error(w, "not ready to decide: the Pod watches have not synced yet", code)
			return
		}
		_, _ = io.WriteString(w, `{"response":{"allowed":true,"uid":"1"},"from":"owner"}`)
	}))
	owner.TLS = &tls.Config{Certificates: []tls.Certificate{mine}, ClientAuth: tls.RequestClientCert}
	owner.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	owner.StartTLS()
	defer owner.Close()
	ownerAddr := strings.TrimPrefix(owner.URL, "https://")

	served := mine
	var ownerOf atomic.Value
	ownerOf.Store(ownerAddr)
	f, err := New(Options{Registry: prometheus.NewRegistry(),
		Owners:       ownersFunc(func(string) (string, bool) { a := ownerOf.Load().(string); return a, a == "" }),
		Certificates: servingFunc(func() (*tls.Certificate, error) { return &served, nil }), MinTLS: tls.VersionTLS13,
		Ready: readiness{}, MaxReviewBytes: 1 << 20, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"request"`) {
			t.Errorf("the local handler got a body without the review: %q", b)
		}
		_, _ = io.WriteString(w, `{"from":"local"}`)
	}))
	call := func(body string, header bool) string {
		req := httptest.NewRequest(http.MethodPost, "/validate-pods", strings.NewReader(body))
		if header {
			req.Header.Set(Header, "1")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Body.String()
	}

	for _, tc := range []struct {
		name, body string
		header     bool
		status     int
		cert       tls.Certificate
		owner      string
		want       string
	}{
		{name: "GPU pod, owner answers", body: gpuCreate, status: 200, cert: mine, owner: ownerAddr, want: `"from":"owner"`},
		{name: "owner serves another certificate", body: gpuCreate, status: 200, cert: other, owner: ownerAddr, want: `"from":"local"`},
		{name: "owner not ready", body: gpuCreate, status: 503, cert: mine, owner: ownerAddr, want: `"from":"local"`},
		{name: "owner gone", body: gpuCreate, status: 200, cert: mine, owner: "127.0.0.1:1", want: `"from":"local"`},
		{name: "this replica owns it", body: gpuCreate, status: 200, cert: mine, owner: "", want: `"from":"local"`},
		{name: "any pod CREATE goes to the owner (the handler there asks whether it is a GPU pod)", body: cpuCreate, status: 200, cert: mine, owner: ownerAddr, want: `"from":"owner"`},
		{name: "UPDATE", body: gpuUpdate, status: 200, cert: mine, owner: ownerAddr, want: `"from":"local"`},
		{name: "already forwarded", body: gpuCreate, header: true, status: 200, cert: mine, owner: ownerAddr, want: `"from":"local"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ownerStatus.Store(int64(tc.status))
			served = tc.cert
			ownerOf.Store(tc.owner)
			f.client.CloseIdleConnections() // each case verifies the certificate anew
			if got := call(tc.body, tc.header); !strings.Contains(got, tc.want) {
				t.Fatalf("answer %s, want %s", got, tc.want)
			}
		})
	}
	if got, _ := ownerGot.Load().(string); got != "1" {
		t.Errorf("the owner got %s=%q, want 1 (it must not forward again)", Header, got)
	}
	if !presented.Load() {
		t.Error("the forwarded review did not present the replicas' certificate as its client certificate")
	}
}

// TestForwardedReviewRefusedWhenNotReady: a replica that cannot decide
// answers a forwarded review 503 (the sender decides itself) instead of
// refusing the pod.
func TestForwardedReviewRefusedWhenNotReady(t *testing.T) {
	f, err := New(Options{Registry: prometheus.NewRegistry(), Owners: ownersFunc(func(string) (string, bool) { return "", true }),
		Certificates: servingFunc(func() (*tls.Certificate, error) { return nil, nil }), MinTLS: tls.VersionTLS13,
		Ready: readiness{errors.New("the Pod watches have not synced yet")}, MaxReviewBytes: 1 << 20, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/validate-pods", strings.NewReader(gpuCreate))
	req.Header.Set(Header, "1")
	rec := httptest.NewRecorder()
	f.Wrap(http.NotFoundHandler()).ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "watches have not synced") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// ownersFunc names owners with a function, and no fallback.
type ownersFunc func(ns string) (string, bool)

func (f ownersFunc) Owner(ns string) (string, bool) { return f(ns) }
func (ownersFunc) Fallback(string) string           { return "" }

// servingFunc serves the certificate a function returns.
type servingFunc func() (*tls.Certificate, error)

func (f servingFunc) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return f() }

// readiness is a replica whose readiness is fixed: nil, or why not.
type readiness struct{ err error }

func (r readiness) NotReady() error { return r.err }
