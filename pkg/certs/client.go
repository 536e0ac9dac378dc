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
	"time"
)

// ClientCertificate signs, with the bundle's CA, a certificate for client
// authentication with the common name cn, valid for validity from now: what
// a cluster administrator gives the API server to present to a webhook
// that asks for one (the local clusters of the tests and demos play that
// part). It returns the certificate and its key, PEM encoded.
func (b *Bundle) ClientCertificate(cn string, now time.Time, validity time.Duration) (cert, key []byte, err error) {
	ca, err := tls.X509KeyPair(b.CACert, b.CAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("the CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("the CA: %w", err)
	}
	blk, _ := pem.Decode(b.CAKey)
	if blk == nil {
		return nil, nil, errors.New("the CA key: no PEM block")
	}
	caKey, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("the CA key: %w", err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the client key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the client certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the client key: %w", err)
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}
