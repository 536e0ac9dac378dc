package ledger

import (
	"context"
	"fmt"
	"maps"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Namespaces are watched for their labels alone: policies read them
// (input.namespaceLabels). The ledger keeps each namespace's label map as
// an immutable value, replaced on every change, so a snapshot hands it out
// without copying.

// UpsertNamespace records the namespace's labels.
func (l *Ledger) UpsertNamespace(ns *corev1.Namespace) {
	labels := ns.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.nsLabels[ns.Name]; ok && maps.Equal(old, labels) {
		return
	}
	l.nsLabels[ns.Name] = maps.Clone(labels)
	close(l.nsChanged)
	l.nsChanged = make(chan struct{})
}

// WaitForNamespace returns once the namespace watch reported namespace ns
// (its labels are known), or with ctx's error.
func (l *Ledger) WaitForNamespace(ctx context.Context, ns string) error {
	for {
		l.mu.RLock()
		_, known := l.nsLabels[ns]
		changed := l.nsChanged
		l.mu.RUnlock()
		if known {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// DeleteNamespace forgets the namespace's labels.
func (l *Ledger) DeleteNamespace(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.nsLabels, name)
}

// NamespaceTransform slims Namespaces to their name, resourceVersion and
// labels.
func NamespaceTransform(obj any) (any, error) {
	switch n := obj.(type) {
	case *corev1.Namespace:
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels}}, nil
	case toolscache.DeletedFinalStateUnknown:
		return n, nil
	}
	return nil, fmt.Errorf("namespace transform: unexpected object %T", obj)
}

// NamespaceHandler applies Namespace events to sink (tombstones included).
func NamespaceHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("namespace", sink.UpsertNamespace, sink.DeleteNamespace, log)
}
