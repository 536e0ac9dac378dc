package serving

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Clients says who may connect. Without CAFile anyone may (a client
// certificate is asked for, and used only to recognise the replicas).
type Clients struct {
	// CAFile is a PEM file of the CA(s) that sign the API server's client
	// certificate (its AdmissionConfiguration's kubeConfigFile presents
	// it). When set, a connection must present either such a certificate or
	// the replicas' serving certificate, or its handshake fails.
	CAFile string
	// CommonNames are the subjects accepted from that CA; empty accepts
	// any certificate it signed for client authentication.
	CommonNames []string
	// ReloadEvery is how often CAFile is read again (default 10s); a file
	// that no longer parses keeps the CA loaded before.
	ReloadEvery time.Duration
}

func (s *Server) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     s.opts.MinVersion,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: s.opts.GetCertificate,
		// Asked of every client; VerifyConnection decides (so that a
		// refusal is counted, and the replicas' certificate, which no CA
		// of the API server's signs, is recognised).
		ClientAuth:       tls.RequestClientCert,
		VerifyConnection: s.verifyClient,
	}
}

// verifyClient accepts the replicas' certificate, and with client
// authentication on only a certificate of the client CA with an accepted
// common name; without it, any client.
func (s *Server) verifyClient(cs tls.ConnectionState) error {
	pool := s.cas.get()
	if len(cs.PeerCertificates) == 0 {
		if pool == nil {
			return nil
		}
		return s.refuseHandshake(errors.New("client authentication is on: a client certificate is required"))
	}
	leaf := cs.PeerCertificates[0]
	if s.isReplica(leaf) || pool == nil {
		return nil
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return s.refuseHandshake(fmt.Errorf("client certificate %q: %w", leaf.Subject.CommonName, err))
	}
	if cns := s.opts.Clients.CommonNames; len(cns) > 0 && !slices.Contains(cns, leaf.Subject.CommonName) {
		return s.refuseHandshake(fmt.Errorf("client certificate %q: common name not accepted (want one of %q)", leaf.Subject.CommonName, cns))
	}
	return nil
}

func (s *Server) refuseHandshake(err error) error {
	s.refused.WithLabelValues(refusedClientCertificate).Inc()
	return err
}

// isReplica reports whether leaf is the serving certificate: the replicas
// share it, and TLS proved the client holds its key.
func (s *Server) isReplica(leaf *x509.Certificate) bool {
	c, err := s.opts.GetCertificate(&tls.ClientHelloInfo{})
	return err == nil && c != nil && len(c.Certificate) > 0 && bytes.Equal(c.Certificate[0], leaf.Raw)
}

// FromReplica reports whether r came on a connection that presented the
// replicas' certificate.
func (s *Server) FromReplica(r *http.Request) bool {
	return r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && s.isReplica(r.TLS.PeerCertificates[0])
}

// caPool is the client CA, swapped whole when its file changes.
type caPool struct {
	pool atomic.Pointer[x509.CertPool]
	pem  []byte
}

func (p *caPool) get() *x509.CertPool { return p.pool.Load() }

// load reads the CA file ("" leaves client authentication off).
func (p *caPool) load(file string) error {
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("client CA: %w", err)
	}
	if bytes.Equal(data, p.pem) {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return fmt.Errorf("client CA %s: no PEM certificate in it", file)
	}
	p.pool.Store(pool)
	p.pem = data
	return nil
}

// reload reads the file again at every tick of t until ctx ends.
func (p *caPool) reload(ctx context.Context, file string, t clock.Ticker, log logr.Logger) {
	defer t.Stop()
	if file == "" {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		before := p.get()
		if err := p.load(file); err != nil {
			log.Error(err, "client CA not reloaded; the one loaded before stays")
		} else if p.get() != before {
			log.Info("client CA reloaded", "file", file)
		}
	}
}
