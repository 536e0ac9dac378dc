package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Bundle is a CA and a serving certificate signed by it, PEM encoded, and
// the CA it replaced (still trusted until clients moved on).
type Bundle struct {
	CACert, CAKey   []byte
	ServerCert, Key []byte
	// PreviousCA is the CA before the last renewal ("" for none): the
	// caBundle trusts it too, so that replicas still serving a certificate
	// it signed keep working while they move to the new one.
	PreviousCA        []byte
	serving           *tls.Certificate
	notAfter, caUntil time.Time
}

// Secret data keys.
const (
	KeyCACert = "ca.crt"
	KeyCAKey  = "ca.key"
	KeyCert   = "tls.crt"
	KeyKey    = "tls.key"
	// KeyPreviousCA keeps the CA a renewal replaced.
	KeyPreviousCA = "ca-previous.crt"
)

// Data returns the bundle as Secret data.
func (b *Bundle) Data() map[string][]byte {
	d := map[string][]byte{KeyCACert: b.CACert, KeyCAKey: b.CAKey, KeyCert: b.ServerCert, KeyKey: b.Key}
	if len(b.PreviousCA) > 0 {
		d[KeyPreviousCA] = b.PreviousCA
	}
	return d
}

// CABundle is what the webhook configurations trust: the CA, and the
// previous one while a renewal settles.
func (b *Bundle) CABundle() []byte {
	return append(append([]byte{}, b.CACert...), b.PreviousCA...)
}

// Generate creates a CA valid for caValidity and a serving certificate valid
// for validity for the given DNS names and IP addresses.
func Generate(names []string, ips []net.IP, now time.Time, caValidity, validity time.Duration) (*Bundle, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "gpuadmit-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the serving key: %w", err)
	}
	cn := "gpuadmit-webhook"
	if len(names) > 0 {
		cn = names[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     names,
		IPAddresses:  ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(min(validity, caValidity)),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the serving certificate: %w", err)
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the CA key: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the serving key: %w", err)
	}
	return Parse(map[string][]byte{
		KeyCACert: pemBlock("CERTIFICATE", caDER), KeyCAKey: pemBlock("EC PRIVATE KEY", caKeyDER),
		KeyCert: pemBlock("CERTIFICATE", der), KeyKey: pemBlock("EC PRIVATE KEY", keyDER),
	})
}

// Parse reads a bundle from Secret data and checks that the serving
// certificate chains to the CA.
func Parse(data map[string][]byte) (*Bundle, error) {
	b := &Bundle{CACert: data[KeyCACert], CAKey: data[KeyCAKey], ServerCert: data[KeyCert], Key: data[KeyKey],
		PreviousCA: data[KeyPreviousCA]}
	pair, err := tls.X509KeyPair(b.ServerCert, b.Key)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CACert) {
		return nil, errors.New("CA certificate: no PEM certificate found")
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: leaf.NotBefore.Add(time.Minute)}); err != nil {
		return nil, fmt.Errorf("serving certificate does not chain to the CA: %w", err)
	}
	blk, _ := pem.Decode(b.CACert)
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	pair.Leaf = leaf
	b.serving, b.notAfter, b.caUntil = &pair, leaf.NotAfter, ca.NotAfter
	return b, nil
}

// Fresh reports whether the bundle is still good at now + renewBefore and
// its serving certificate covers names and ips.
func (b *Bundle) Fresh(names []string, ips []net.IP, now time.Time, renewBefore time.Duration) bool {
	deadline := now.Add(renewBefore)
	if !deadline.Before(b.notAfter) || !deadline.Before(b.caUntil) {
		return false
	}
	for _, n := range names {
		if b.serving.Leaf.VerifyHostname(n) != nil {
			return false
		}
	}
	for _, ip := range ips {
		if b.serving.Leaf.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	return true
}

// Certificate is the serving certificate for tls.Config.
func (b *Bundle) Certificate() *tls.Certificate { return b.serving }

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil { // crypto/rand does not fail on supported platforms
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
