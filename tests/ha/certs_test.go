package ha_test

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/certs"
)

// TestCertificateRenewalAcrossReplicas: three replicas that start at once
// share one self-managed CA (never two); when the serving certificate is due
// for renewal, one replica renews it, every replica serves the new one
// within a minute, and the caBundle trusts the old and the new CA across
// the renewal: no review fails while pods are created all along.
func TestCertificateRenewalAcrossReplicas(t *testing.T) {
	c := startHAWith(t, func(o *replicas.Options) { o.SelfManagedCerts = true })
	ctx := t.Context()
	secrets := c.Kube.CoreV1().Secrets(local.Namespace)
	s, err := secrets.Get(ctx, "gpuadmit-webhook-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca1 := s.Data[certs.KeyCACert]
	for i := range c.Replicas {
		if !signedBy(t, c.Replicas[i], ca1) {
			t.Fatalf("%s serves a certificate of another CA: the replicas did not converge on one bundle", c.Replicas[i].Name)
		}
	}
	seed(t, c, "renew", 1<<29)
	k := fastClient(t, c)
	var tl creates.Tally
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			_, err := k.CoreV1().Pods("renew").Create(ctx, creates.GPUPod("renew", fmt.Sprintf("p-%04d", i), "", 1024), metav1.CreateOptions{})
			tl.Record(err)
		}
	})
	// The serving certificate expires within the renewal window (30 days).
	s.Data[certs.KeyCert] = reissue(t, s.Data[certs.KeyCACert], s.Data[certs.KeyCAKey], s.Data[certs.KeyKey], 24*time.Hour)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var ca2 []byte
	waitFor(t, "every replica serves a renewed certificate", func() bool {
		s, err = secrets.Get(ctx, "gpuadmit-webhook-tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ca2 = s.Data[certs.KeyCACert]
		all := !bytes.Equal(ca2, ca1)
		for i := range c.Replicas {
			all = all && signedBy(t, c.Replicas[i], ca2)
		}
		return all
	})
	switched := time.Since(start)
	admitted := tl.Admitted.Load()
	waitFor(t, "creates admitted after the switch", func() bool { return tl.Admitted.Load() >= admitted+10 })
	close(stop)
	wg.Wait()
	vwc, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bundle := vwc.Webhooks[0].ClientConfig.CABundle
	t.Logf("renewed: every replica served the new CA's certificate %s after the old one was due; %s; caBundle trusts new %v, old %v",
		switched.Round(100*time.Millisecond), &tl, bytes.Contains(bundle, ca2), bytes.Contains(bundle, ca1))
	if tl.Unavailable.Load() != 0 || len(tl.Other) != 0 || tl.Admitted.Load() == 0 {
		t.Fatalf("reviews failed across the renewal: %q %q", tl.Why, tl.Other)
	}
	if !bytes.Contains(bundle, ca2) || !bytes.Contains(bundle, ca1) || !bytes.Equal(s.Data[certs.KeyPreviousCA], ca1) {
		t.Fatal("the caBundle must trust both CAs across the renewal")
	}
}

// signedBy reports whether replica r serves a certificate signed by the CA.
func signedBy(t *testing.T, r *replicas.Replica, caPEM []byte) bool {
	t.Helper()
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served chain
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	blk, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return conn.ConnectionState().PeerCertificates[0].CheckSignatureFrom(ca) == nil
}

// reissue signs a serving certificate for 127.0.0.1 with the CA, valid for validity.
func reissue(t *testing.T, caPEM, caKeyPEM, keyPEM []byte, validity time.Duration) []byte {
	t.Helper()
	blk, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := pem.Decode(caKeyPEM)
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := pem.Decode(keyPEM)
	key, err := x509.ParseECPrivateKey(sb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
