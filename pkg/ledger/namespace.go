package ledger

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
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

// namespace is the per-namespace state.
type namespace struct {
	used       effective.Usage
	pods       int
	unresolved map[types.UID]*podRecord
	invalid    map[types.UID]*invalidPod
	warned     map[types.UID]*podRecord
	quotas     map[string]*quota
	// view is what quotas give every snapshot (quotaview.go; nil: no
	// quotas), replaced whenever quotas change.
	view *quotaView
	// byScope is the pods' usage per scope attributes (scoped.go).
	byScope map[podScope]effective.Usage
	// byUser is used per user charged (Options.Users; "" included): the
	// team quotas' per-user sums.
	byUser map[string]effective.Usage
	// claims counts the recorded claims; claimProblems are theirs.
	claims        int
	claimProblems map[types.UID]*Problem
}

func (n *namespace) empty() bool {
	return n.pods == 0 && n.claims == 0 && n.used.IsZero() && len(n.unresolved) == 0 && len(n.invalid) == 0 &&
		len(n.warned) == 0 && len(n.quotas) == 0
}

// ns returns the namespace state, creating it.
func (l *Ledger) ns(name string) *namespace {
	n := l.namespaces[name]
	if n == nil {
		n = &namespace{
			unresolved: map[types.UID]*podRecord{},
			invalid:    map[types.UID]*invalidPod{},
			warned:     map[types.UID]*podRecord{},
			quotas:     map[string]*quota{},

			claimProblems: map[types.UID]*Problem{},
		}
		l.namespaces[name] = n
	}
	return n
}

func (l *Ledger) gcNamespaceLocked(name string) {
	if n := l.namespaces[name]; n != nil && n.empty() {
		delete(l.namespaces, name)
	}
}
