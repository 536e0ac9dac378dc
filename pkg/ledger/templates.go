package ledger

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// A pod's resourceClaimTemplateName becomes a claim only once the claim
// controller creates it, after the pod exists. The ledger charges that
// claim as any other, from the moment its watch delivers it: the claim was
// decided and reserved at its own CREATE, as the in-tree ResourceQuota
// admission charges a claim, not the pod. Nothing is charged under the pod
// for its templates (a template may be created or changed after the pod's
// admission: charging it under the pod would charge what no decision saw).
// The templates are kept so that a pod's admission can check, for early
// feedback, that its templates' claims would fit (pkg/decision).
//
// A generated claim's controller owner reference and its
// resource.kubernetes.io/pod-claim-name annotation are anyone's to write on
// a claim they create: gpuadmit trusts them for nothing.

// UpsertTemplate records a ResourceClaimTemplate.
func (l *Ledger) UpsertTemplate(t *resourcev1.ResourceClaimTemplate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.templates[podName{t.Namespace, t.Name}] = t
}

// DeleteTemplate forgets a ResourceClaimTemplate.
func (l *Ledger) DeleteTemplate(namespace, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.templates, podName{namespace, name})
}

// Template returns the ResourceClaimTemplate ns/name the watch delivered
// (nil when none), shared: read only.
func (l *Ledger) Template(ns, name string) *resourcev1.ResourceClaimTemplate {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.templates[podName{ns, name}]
}
