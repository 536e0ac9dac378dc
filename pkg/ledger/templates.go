package ledger

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// A pod's resourceClaimTemplateName becomes a claim only once the claim
// controller creates it, after the pod exists. So that the devices count
// from the pod's admission on, a recorded pod charges each of its
// templates' claims (of governed classes) until the generated claim is
// recorded, and the claim from then on: charged once, never twice, never
// not at all.
//
//	pod recorded, template known, no claim yet ──▶ the template's claim charged under the pod
//	generated claim recorded (controller owner = the pod,
//	  annotation resource.kubernetes.io/pod-claim-name) ──▶ moved: the claim charged, the pod's part gone
//	pod terminated or deleted first ───────────────────▶ the pod's part gone (no claim holds devices)
//
// The pod's part is computed once, from the template as it is then: a
// template edited or deleted later does not lower it.

// PodClaimNameAnnotation is the annotation the claim controller puts on a
// claim it generates: the pod's name for the claim (spec.resourceClaims[].name).
const PodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name"

// podClaim is one claim of a pod, by the pod's UID and its name for it.
type podClaim struct {
	pod  types.UID
	name string
}

// UpsertTemplate records a ResourceClaimTemplate.
func (l *Ledger) UpsertTemplate(t *resourcev1.ResourceClaimTemplate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.templates[podName{t.Namespace, t.Name}] = t
}

// DeleteTemplate forgets a ResourceClaimTemplate (the pods' parts computed
// from it stay).
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

// templatesLocked charges the pod's templates' claims that no recorded
// claim stands for yet (or drops them all once the pod is terminal).
func (l *Ledger) templatesLocked(uid types.UID, pod *corev1.Pod) {
	if l.charger == nil {
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		l.dropTemplatesLocked(uid)
		return
	}
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimTemplateName == nil {
			continue
		}
		key := podClaim{uid, rc.Name}
		if _, ok := l.generated[key]; ok {
			continue
		}
		if _, ok := l.pending[key]; ok {
			continue // computed once
		}
		t := l.templates[podName{pod.Namespace, *rc.ResourceClaimTemplateName}]
		if t == nil || !l.charger.Governs(&t.Spec.Spec) {
			continue
		}
		rec := &claimRecord{uid: types.UID(string(uid) + "/" + rc.Name), namespace: pod.Namespace, name: pod.Name + "/" + rc.Name}
		// A watch event has no deadline: the charger's per-claim CEL cost
		// budget bounds the evaluation.
		ds, err := l.charger.Demands(context.Background(), rec.name, &t.Spec.Spec, nil, l.inventoryLocked(), l.claimOptionsLocked())
		if err != nil {
			rec.problem = &Problem{Kind: ProblemClaim, Namespace: pod.Namespace, Name: rec.name,
				Message: fmt.Sprintf("ResourceClaimTemplate %s: %v", t.Name, err)}
		} else {
			rec.used = ds.Effective()
		}
		l.chargeClaimLocked(rec)
		l.pending[key] = rec
	}
}

// dropTemplatesLocked uncharges the pod's templates' claims it still
// charges.
func (l *Ledger) dropTemplatesLocked(uid types.UID) {
	for key, rec := range l.pending {
		if key.pod == uid {
			l.unchargeClaimLocked(rec)
			delete(l.claims, rec.uid)
			delete(l.pending, key)
		}
	}
}

// generatedBy is the pod claim a claim was generated for (its controller
// owner is a Pod and it carries PodClaimNameAnnotation).
func generatedBy(c *resourcev1.ResourceClaim) (podClaim, bool) {
	name, ok := c.Annotations[PodClaimNameAnnotation]
	if !ok {
		return podClaim{}, false
	}
	for _, o := range c.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "Pod" && o.APIVersion == "v1" {
			return podClaim{o.UID, name}, true
		}
	}
	return podClaim{}, false
}

// claimRecordedLocked moves the charge of a generated claim's pod part to
// the claim (claims.go calls it when it records one).
func (l *Ledger) claimRecordedLocked(c *resourcev1.ResourceClaim) {
	key, ok := generatedBy(c)
	if !ok {
		return
	}
	l.generated[key] = c.UID
	if rec := l.pending[key]; rec != nil {
		l.unchargeClaimLocked(rec)
		delete(l.claims, rec.uid)
		delete(l.pending, key)
	}
}

// ClaimCovered reports whether a generated claim is already charged under
// its pod (the pod is recorded and charges the claim's template with at
// least demand in every dimension): its admission adds nothing.
func (l *Ledger) ClaimCovered(c *resourcev1.ResourceClaim, demand effective.Usage) bool {
	key, ok := generatedBy(c)
	if !ok {
		return false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	rec := l.pending[key]
	if rec == nil || rec.namespace != c.Namespace || rec.problem != nil {
		return false
	}
	return rec.used.Max(demand).Equal(rec.used)
}
