package admission

import (
	"context"
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// Recorder records a denial where the namespace's users look for it: a
// Warning Event about regarding, in regarding's Namespace (pkg/server's,
// through client-go's EventBroadcaster, which rate-limits and aggregates).
// The handlers call it on a goroutine of its own, after the answer is
// decided, so that it can neither delay nor fail a review; it should still
// return within a small bound (dropping what it cannot record; pkg/events
// reads the owner's own owner, bounded) and may log with ctx's logger. A
// nil Recorder records nothing.
type Recorder interface {
	Denied(ctx context.Context, regarding corev1.ObjectReference, reason, message string)
}

// The reasons of the denials' Events.
const (
	// EventReasonQuotaExceeded: the demand would pass a limit of the
	// namespace (the decision's Exceeded limits).
	EventReasonQuotaExceeded = "GPUQuotaExceeded"
	// EventReasonPolicyDenied: another rule of the policies denied it.
	EventReasonPolicyDenied = "GPUPolicyDenied"
)

// MaxEventMessage bounds the message of a denial's Event in bytes (the
// events.k8s.io API's own bound on a note); a longer one is cut, ending
// with "...".
const MaxEventMessage = 1024

// maxRefField bounds the owner reference fields an Event may name
// (Kubernetes names are at most 253 bytes); an owner beyond is not
// trusted to name the Event's object, the namespace is.
const maxRefField = 253

// recordDenial hands the denial of s to rec, unless the review is a dry
// run (sideEffects: NoneOnDryRun), rec is nil or the subject has no
// namespace (a hand-made review), on a goroutine: whatever
// rec does (blocks, panics) the answer stands.
func recordDenial(ctx context.Context, rec Recorder, s subject, dryRun bool, res decision.Result, msg string) {
	if rec == nil || dryRun || s.meta == nil || s.meta.GetNamespace() == "" {
		return
	}
	reason, hint := EventReasonPolicyDenied, ""
	if len(res.Exceeded) > 0 {
		reason, hint = EventReasonQuotaExceeded, usageHint(s.meta.GetNamespace())
	}
	ref := regarding(s.meta, s.meta.GetNamespace())
	message := bounded(s.String()+" denied: "+msg, MaxEventMessage-len(hint)) + hint
	ctx = context.WithoutCancel(ctx) // the review is answered meanwhile; its logger stays
	go func() {
		defer func() {
			if r := recover(); r != nil {
				logf.FromContext(ctx).Error(fmt.Errorf("%v", r), "recording the denial's Event panicked; the answer was not affected",
					s.keyValues()...)
			}
		}()
		rec.Denied(ctx, ref, reason, message)
	}()
}

// usageHint ends a quota denial's Event: where the namespace's users read
// its GPU usage against its limits (the GPUUsage summary, which the
// ResourceQuota's own status does not show for GPU memory and cores).
func usageHint(ns string) string {
	return "; the namespace's GPU usage against its limits: kubectl get gpuusage -n " + ns
}

// regarding is the object a denial's Event is about: the subject's
// controller (a pod's ReplicaSet, Job, StatefulSet; a generated claim's
// pod), in namespace ns, whose `kubectl describe` shows it; else the
// Namespace ns, the Event still in ns so that `kubectl get events -n ns`
// lists it (the API server requires an Event's involvedObject.namespace to
// be the Event's namespace).
func regarding(obj metav1.Object, ns string) corev1.ObjectReference {
	if o := metav1.GetControllerOfNoCopy(obj); o != nil && boundedRef(o) {
		return corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Namespace: ns}
	}
	return corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns, Namespace: ns}
}

// boundedRef reports whether an owner reference is fit to name an Event's
// object: every field present and of a Kubernetes name's size (the API
// server validated them, a forged review did not).
func boundedRef(o *metav1.OwnerReference) bool {
	for _, f := range []string{o.APIVersion, o.Kind, o.Name, string(o.UID)} {
		if f == "" || len(f) > maxRefField {
			return false
		}
	}
	return true
}

// bounded cuts s to at most n bytes, on a rune boundary, marking the cut
// with "...".
func bounded(s string, n int) string {
	const more = "..."
	if len(s) <= n {
		return s
	}
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}
