package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestFresh(t *testing.T) {
	now := time.Now()
	b, err := Generate([]string{"svc.ns.svc"}, []net.IP{net.IPv4(127, 0, 0, 1)}, now, 365*24*time.Hour, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		names []string
		ips   []net.IP
		at    time.Time
		want  bool
	}{
		{"new", []string{"svc.ns.svc"}, []net.IP{net.IPv4(127, 0, 0, 1)}, now, true},
		{"within the renewal window", []string{"svc.ns.svc"}, nil, now.Add(61 * 24 * time.Hour), false},
		{"another DNS name", []string{"other.ns.svc"}, nil, now, false},
		{"another IP", nil, []net.IP{net.IPv4(10, 0, 0, 1)}, now, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.Fresh(tc.names, tc.ips, tc.at, 30*24*time.Hour); got != tc.want {
				t.Errorf("Fresh = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := Parse(map[string][]byte{KeyCACert: b.CACert, KeyCert: []byte("junk"), KeyKey: b.Key}); err == nil {
		t.Error("Parse accepted a broken certificate")
	}
}

// TestRotator: the first sync creates the Secret and patches both
// caBundles, a TLS client trusting the caBundle verifies the served
// certificate, and a second rotator (a restart) keeps the same CA.
func TestRotator(t *testing.T) {
	ctx := context.Background()
	url := "https://127.0.0.1:1/x"
	kube := fake.NewClientset(
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.x", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.x", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}}},
	)
	opts := Options{Namespace: "ns", SecretName: "tls", DNSNames: []string{"svc.ns.svc"}, MutatingWebhooks: []string{"m"}, ValidatingWebhooks: []string{"v"}}
	r := NewRotator(kube, opts)
	if r.Ready() {
		t.Fatal("ready before the first sync")
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.Ready() {
		t.Fatal("not ready after a sync")
	}
	v, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "v", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(v.Webhooks[0].ClientConfig.CABundle) {
		t.Fatal("caBundle not patched")
	}
	cert, err := r.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "svc.ns.svc"}); err != nil {
		t.Fatalf("served certificate does not verify against the caBundle: %v", err)
	}
	r2 := NewRotator(kube, opts)
	if err := r2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	c2, _ := r2.GetCertificate(nil)
	if _, err := c2.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "svc.ns.svc"}); err != nil {
		t.Fatalf("a restarted rotator changed the CA: %v", err)
	}
}
