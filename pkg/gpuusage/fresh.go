package gpuusage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// proveFresh returns nil once this replica may decide in ns: at once while
// nothing made it suspect (pause.go), or when ns was proved since; else
// once a fresh list of ns's pods (metadata only, from the API server) names
// no pod its ledger does not know. (A pod it knows at an older version can
// only be over-counted: a shrink not seen yet. A pod it does not know may
// be one the others admitted and stopped reserving while it was away.)
func (s *Store) proveFresh(ctx context.Context, ns string) error {
	since := s.progress.alive.suspectSince()
	if since == 0 {
		return nil
	}
	s.mu.Lock()
	proved := s.proved[ns]
	s.mu.Unlock()
	if proved >= since {
		return nil
	}
	started := s.progress.alive.now()
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
	s.mu.Lock()
	s.proved[ns] = started
	s.mu.Unlock()
	s.opts.Log.Info("view proved fresh after a pause or a cut-off", "namespace", ns, "pods", len(pods.Items))
	return nil
}
