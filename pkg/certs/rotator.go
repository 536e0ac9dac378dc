package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Options configure a Rotator.
type Options struct {
	// Namespace and SecretName locate the Secret that keeps the bundle.
	Namespace, SecretName string
	// DNSNames and IPs the serving certificate is valid for.
	DNSNames []string
	IPs      []net.IP
	// MutatingWebhooks and ValidatingWebhooks name the webhook
	// configurations whose caBundle is kept equal to the CA.
	MutatingWebhooks, ValidatingWebhooks []string
	// CAValidity (default 5 years), Validity (default 1 year), RenewBefore
	// (default 30 days) and CheckEvery (default 10 seconds: every replica
	// serves a renewed certificate within that, plus Settle).
	CAValidity, Validity, RenewBefore, CheckEvery time.Duration
	// Settle is how long a new certificate waits, after the caBundles trust
	// its CA, before it is served: the API server reads the webhook
	// configurations through a watch (default 5 seconds).
	Settle time.Duration
	Log    logr.Logger
}

// Rotator keeps the serving certificate and the caBundles current. Start it
// (a controller-runtime Runnable); the TLS server reads GetCertificate.
//
// Several replicas share one bundle through the Secret: the one that finds
// no Secret (or a stale one) creates (or renews) it with the Secret's
// resourceVersion, the others lose that race and load the winner's, so
// there is only ever one CA. A renewal keeps the CA it replaced in the
// Secret; every replica writes the same caBundle (the CA and the previous
// one) and serves a new certificate only once the caBundles trust its CA
// and Settle has passed, so no review fails across a renewal.
type Rotator struct {
	client kubernetes.Interface
	opts   Options
	now    func() time.Time

	mu     sync.RWMutex
	cur    *Bundle
	next   *Bundle   // loaded, its CA trusted since nextAt; served from nextAt+Settle
	nextAt time.Time //
	ready  bool
}

// NewRotator returns a rotator; nothing happens until Start or Sync.
func NewRotator(client kubernetes.Interface, opts Options) *Rotator {
	if opts.CAValidity <= 0 {
		opts.CAValidity = 5 * 365 * 24 * time.Hour
	}
	if opts.Validity <= 0 {
		opts.Validity = 365 * 24 * time.Hour
	}
	if opts.RenewBefore <= 0 {
		opts.RenewBefore = 30 * 24 * time.Hour
	}
	if opts.CheckEvery <= 0 {
		opts.CheckEvery = 10 * time.Second
	}
	if opts.Settle <= 0 {
		opts.Settle = 5 * time.Second
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Rotator{client: client, opts: opts, now: time.Now}
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.RLock()
	cur, next, at := r.cur, r.next, r.nextAt
	r.mu.RUnlock()
	if next != nil && !r.now().Before(at.Add(r.opts.Settle)) {
		r.mu.Lock()
		if r.next == next {
			r.cur, r.next = next, nil
		}
		r.mu.Unlock()
		cur = next
	}
	if cur == nil {
		return nil, errors.New("gpuadmit: no serving certificate yet")
	}
	return cur.Certificate(), nil
}

// Ready reports whether a certificate is loaded and every caBundle holds its CA.
func (r *Rotator) Ready() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ready
}

// Start syncs now (retrying until it succeeds or ctx ends) and then every
// CheckEvery until ctx is done.
func (r *Rotator) Start(ctx context.Context) error {
	t := time.NewTicker(r.opts.CheckEvery)
	defer t.Stop()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		if err := r.Sync(ctx); err != nil {
			r.opts.Log.Error(err, "certificate sync failed; retrying")
		}
		wait := t.C
		if !r.Ready() {
			wait = retry.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wait:
		}
	}
}

// Sync loads or renews the bundle in the Secret, patches the caBundles,
// and then (after Settle when it replaces one already served) serves it.
func (r *Rotator) Sync(ctx context.Context) error {
	b, err := r.loadOrCreate(ctx)
	if err != nil {
		return err
	}
	if err := r.patchCABundles(ctx, b.CABundle()); err != nil {
		r.setReady(false)
		return err
	}
	r.mu.Lock()
	switch {
	case r.cur == nil: // nothing served yet: serve it now
		r.cur = b
	case bytes.Equal(r.cur.ServerCert, b.ServerCert):
	case r.next == nil || !bytes.Equal(r.next.ServerCert, b.ServerCert):
		r.next, r.nextAt = b, r.now()
	}
	r.ready = true
	r.mu.Unlock()
	return nil
}

func (r *Rotator) setReady(v bool) {
	r.mu.Lock()
	r.ready = v
	r.mu.Unlock()
}

func (r *Rotator) loadOrCreate(ctx context.Context) (*Bundle, error) {
	o := r.opts
	secrets := r.client.CoreV1().Secrets(o.Namespace)
	now := time.Now()
	s, err := secrets.Get(ctx, o.SecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		b, err := Generate(o.DNSNames, o.IPs, now, o.CAValidity, o.Validity)
		if err != nil {
			return nil, err
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.SecretName, Namespace: o.Namespace},
			Type: corev1.SecretTypeOpaque, Data: b.Data()}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			return r.loadOrCreate(ctx) // another replica created it first: use its bundle
		} else if err != nil {
			return nil, fmt.Errorf("creating secret %s/%s: %w", o.Namespace, o.SecretName, err)
		}
		o.Log.Info("created the webhook CA and serving certificate", "secret", klog.KRef(o.Namespace, o.SecretName))
		return b, nil
	case err != nil:
		return nil, fmt.Errorf("reading secret %s/%s: %w", o.Namespace, o.SecretName, err)
	}
	if b, err := Parse(s.Data); err == nil && b.Fresh(o.DNSNames, o.IPs, now, o.RenewBefore) {
		return b, nil
	} else if err != nil && len(s.Data) > 0 {
		o.Log.Info("replacing an unusable webhook certificate", "secret", klog.KRef(o.Namespace, o.SecretName), "problem", err.Error())
	}
	b, err := Generate(o.DNSNames, o.IPs, now, o.CAValidity, o.Validity)
	if err != nil {
		return nil, err
	}
	if old, err := Parse(s.Data); err == nil && now.Before(old.caUntil) {
		b.PreviousCA = old.CACert // still trusted while replicas move to the new CA
	}
	s.Data = b.Data()
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
		return r.loadOrCreate(ctx) // another replica renewed it first: use its bundle
	} else if err != nil {
		return nil, fmt.Errorf("renewing secret %s/%s: %w", o.Namespace, o.SecretName, err)
	}
	o.Log.Info("renewed the webhook CA and serving certificate", "secret", klog.KRef(o.Namespace, o.SecretName))
	return b, nil
}

// patchCABundles sets every webhook's caBundle of the named configurations.
func (r *Rotator) patchCABundles(ctx context.Context, ca []byte) error {
	adm := r.client.AdmissionregistrationV1()
	for _, name := range r.opts.MutatingWebhooks {
		c, err := adm.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading mutatingwebhookconfiguration %s: %w", name, err)
		}
		changed := false
		for i := range c.Webhooks {
			if !bytes.Equal(c.Webhooks[i].ClientConfig.CABundle, ca) {
				c.Webhooks[i].ClientConfig.CABundle, changed = ca, true
			}
		}
		if changed {
			if _, err := adm.MutatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("patching the caBundle of mutatingwebhookconfiguration %s: %w", name, err)
			}
		}
	}
	for _, name := range r.opts.ValidatingWebhooks {
		c, err := adm.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading validatingwebhookconfiguration %s: %w", name, err)
		}
		changed := false
		for i := range c.Webhooks {
			if !bytes.Equal(c.Webhooks[i].ClientConfig.CABundle, ca) {
				c.Webhooks[i].ClientConfig.CABundle, changed = ca, true
			}
		}
		if changed {
			if _, err := adm.ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("patching the caBundle of validatingwebhookconfiguration %s: %w", name, err)
			}
		}
	}
	return nil
}
