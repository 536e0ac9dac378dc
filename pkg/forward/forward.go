package forward

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// Header marks a review one replica forwarded to another: the
// receiver decides it itself, or answers 503 when it cannot. The webhook
// server accepts it only on a connection that presented the replicas'
// shared certificate (the forwarder presents it as its client
// certificate); from anyone else it is refused with 403.
const Header = "X-Gpuadmit-Forwarded"

// Forwarder sends the validating review of a pod CREATE (the API server's
// matchConditions send this path only pods asking for a managed resource)
// to the replica that owns the pod's namespace (membership.Members.Owner), so that one replica
// writes each namespace's GPUReservationSet and replicas do not conflict on it.
// Anything that goes wrong (the owner is gone, slow, not ready, or serves
// another certificate) falls back to deciding here: forwarding saves
// conflicts, the compare-and-swap write keeps the quota.
//
// The owner is trusted when it serves the very certificate this replica
// serves (all replicas share one Secret): TLS proves it holds the key. The
// same certificate, presented as this replica's client certificate, proves
// to the owner that the review comes from a replica.
type Forwarder struct {
	owners  Owners
	leaf    func() ([]byte, error) // the certificate this replica serves
	ready   func() error
	client  *http.Client
	log     logr.Logger
	results *prometheus.CounterVec
	// maxBytes bounds a review read, and an owner's answer.
	maxBytes int64
}

// Owners name the replica a namespace's reviews go to (*membership.Members).
type Owners interface {
	// Owner is the replica that owns ns (self: this one).
	Owner(ns string) (addr string, self bool)
	// Fallback is the replica that would own ns without this one ("": none).
	Fallback(ns string) string
}

// Certificates serve this replica's certificate (*certs.Rotator, or
// controller-runtime's *certwatcher.CertWatcher): the one its peers must
// serve, and the one it presents to them.
type Certificates interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Readiness says why this replica cannot decide now, or nil.
type Readiness interface {
	NotReady() error
}

// Options are what a Forwarder is handed.
type Options struct {
	// Registry receives gpuadmit_reviews_forwarded_total.
	Registry prometheus.Registerer
	Owners   Owners
	// Certificates is the certificate all replicas serve.
	Certificates Certificates
	// MinTLS is the lowest TLS version spoken to a peer.
	MinTLS uint16
	// Ready is this replica's readiness: a forwarded review it cannot
	// decide gets a 503; a namespace it owns goes to the fallback.
	Ready Readiness
	// MaxReviewBytes bounds a review read, and an owner's answer.
	MaxReviewBytes int64
	Log            logr.Logger
}

// New builds the Forwarder of o.
func New(o Options) (*Forwarder, error) {
	if o.MaxReviewBytes <= 0 {
		return nil, fmt.Errorf("forwarding: MaxReviewBytes must be positive, not %d", o.MaxReviewBytes)
	}
	owners, minTLS, ready, log := o.Owners, o.MinTLS, o.Ready.NotReady, o.Log
	cert := func() (*tls.Certificate, error) { return o.Certificates.GetCertificate(&tls.ClientHelloInfo{}) }
	leaf := func() ([]byte, error) {
		c, err := cert()
		if err != nil {
			return nil, err
		}
		if c == nil || len(c.Certificate) == 0 {
			return nil, errors.New("no serving certificate yet")
		}
		return c.Certificate[0], nil
	}
	f := &Forwarder{owners: owners, leaf: leaf, ready: ready, log: log, maxBytes: o.MaxReviewBytes,
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuadmit_reviews_forwarded_total",
			Help: "Validating reviews of GPU pods sent to the replica that owns their namespace, by result: answered (by the owner), fallback (decided here instead)."},
			[]string{"result"})}
	f.client = &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{
			MinVersion:           minTLS,
			NextProtos:           []string{"http/1.1"},
			InsecureSkipVerify:   true, //nolint:gosec // verified below: the peer must serve our own certificate
			VerifyConnection:     f.verify,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert() },
		},
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
	}}
	if err := o.Registry.Register(f.results); err != nil {
		return nil, fmt.Errorf("registering forwarding metrics: %w", err)
	}
	return f, nil
}

// verify accepts a peer that serves the certificate this replica serves.
func (f *Forwarder) verify(cs tls.ConnectionState) error {
	mine, err := f.leaf()
	if err != nil {
		return err
	}
	if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, mine) {
		return errors.New("the peer does not serve this replica's certificate")
	}
	return nil
}

// Wrap forwards what it can and hands the rest to local.
func (f *Forwarder) Wrap(local http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(Header) != "" { // from a replica: the webhook server checked its certificate
			if err := f.ready(); err != nil {
				http.Error(w, "not ready to decide: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			local.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, f.maxBytes))
		if err != nil {
			http.Error(w, "reading the review: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		addr, ok := f.target(body)
		if !ok {
			local.ServeHTTP(w, r)
			return
		}
		if err := f.forward(r.Context(), w, addr, r.URL.RequestURI(), body); err != nil {
			f.results.WithLabelValues("fallback").Inc()
			f.log.V(1).Info("deciding here: forwarding to the namespace's owner failed", "owner", addr, "error", err.Error())
			local.ServeHTTP(w, r)
			return
		}
		f.results.WithLabelValues("answered").Inc()
	})
}

// target returns the owner's address when the review is a pod CREATE in
// a namespace another replica owns. Whether the pod asks for a managed
// resource is not asked here: the API server's matchConditions send this
// path only such pods, and the handler that decides, here or at the owner,
// asks it once where it decodes the review (pkg/admission).
func (f *Forwarder) target(body []byte) (string, bool) {
	var review struct {
		Request struct {
			Namespace string `json:"namespace"`
			Operation string `json:"operation"`
		} `json:"request"`
	}
	if json.Unmarshal(body, &review) != nil || review.Request.Operation != "CREATE" || review.Request.Namespace == "" {
		return "", false // decided (or refused as malformed) here
	}
	addr, self := f.owners.Owner(review.Request.Namespace)
	if self && f.ready() != nil {
		// This replica owns the namespace but cannot decide (cut off from
		// the API server, or proving its view after a pause): the next
		// replica in the namespace's order decides instead of a refusal.
		addr = f.owners.Fallback(review.Request.Namespace)
		return addr, addr != ""
	}
	return addr, !self && addr != ""
}

// forward posts the review to the owner within half of what is left of the
// review's time (the other half stays for deciding here) and copies its
// answer; an error means nothing was written to w.
func (f *Forwarder) forward(ctx context.Context, w http.ResponseWriter, addr, uri string, body []byte) error {
	budget := 4 * time.Second
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d) / 2
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+uri, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(Header, "1")
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(answer))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
	return nil
}
