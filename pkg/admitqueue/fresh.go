package admitqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// proofs are when each namespace was last proved fresh (on the clock of
// Membership.Now).
type proofs struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (p *proofs) init() { p.at = map[string]time.Time{} }

func (p *proofs) provedSince(ns string, since time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.at[ns]
	return ok && !at.Before(since)
}

func (p *proofs) proved(ns string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at[ns] = at
}

// proveFresh returns nil once this replica may decide in ns: at once while
// nothing made it suspect (membership's liveness), or when ns was proved
// since; else once a fresh list of ns's pods (metadata only, from the API
// server) names no pod its ledger does not know. (A pod it knows at an
// older version can only be over-counted: a shrink not seen yet. A pod it
// does not know may be one the others admitted and stopped reserving while
// it was away.)
func (s *Store) proveFresh(ctx context.Context, ns string) error {
	since := s.members.SuspectSince()
	if since.IsZero() || s.proofs.provedSince(ns, since) {
		return nil
	}
	started := s.members.Now()
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := s.api.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("this replica was paused or cut off from the API server and cannot list the pods of %s to prove its view: %w", ns, err)
	}
	for _, p := range pods.Items {
		if !s.ledger.Knows(p.UID) {
			return fmt.Errorf("this replica was paused or cut off from the API server: its pod watch has not delivered pod %s/%s yet, so it does not decide in %s until it has",
				ns, p.Name, ns)
		}
	}
	s.proofs.proved(ns, started)
	s.opts.Log.Info("view proved fresh after a pause or a cut-off", "namespace", ns, "pods", len(pods.Items))
	return nil
}
