package budget

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// ClaimCharges tells what the ledger charges a ResourceClaim now (the
// ledger; false: it charges nothing).
type ClaimCharges interface {
	ClaimCharge(uid types.UID) (effective.Usage, bool)
}

// claimInfo is what makes an entry a ResourceClaim's: it burns its charge
// over the union of the runs of the pods that use it (its controller pod,
// for a template's claim, and the pods of its namespace naming it).
type claimInfo struct {
	charge effective.Usage
	owner  types.UID
}

// UpsertClaim records a governed ResourceClaim (the ledger has recorded
// it: its charge is the ledger's). A claim the ledger charges nothing is
// not kept.
func (t *Tracker) UpsertClaim(c *resourcev1.ResourceClaim) {
	if t.opts.Claims == nil {
		return
	}
	uid := uidOf(c)
	charge, ok := t.opts.Claims.ClaimCharge(c.UID)
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.pods[uid]
	if e == nil {
		if !ok || charge.IsZero() {
			return
		}
		var user string
		if t.opts.Users != nil {
			user = t.opts.Users.ClaimUserOf(c)
		}
		e = &podEntry{uid: uid, namespace: c.Namespace, name: c.Name, user: user, claim: &claimInfo{}}
		t.addLocked(e)
	}
	if e.claim == nil || e.deleted() {
		return
	}
	if ok {
		e.claim.charge = charge.Max(e.claim.charge) // a claim's charge never goes down while it lives
	}
	if ref := metav1.GetControllerOfNoCopy(c); ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1" {
		e.claim.owner = ref.UID
	}
	t.claimTimelineLocked(e)
	t.bumpLocked(e.namespace)
}

// DeleteClaim records that this replica saw the claim deleted now.
func (t *Tracker) DeleteClaim(namespace, name string) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.byNS[namespace] {
		if e.claim != nil && e.name == name && !e.deleted() {
			e.obs.Deleted = now
			t.tombstones[e.uid] = e
			t.ended = append(t.ended, e)
			t.claimTimelineLocked(e)
			t.bumpLocked(namespace)
		}
	}
	t.sweepLocked(now)
}

// claimTimelineLocked recomputes claim e's timeline from its users'.
func (t *Tracker) claimTimelineLocked(e *podEntry) {
	var users []burn.Timeline
	for _, p := range t.byNS[e.namespace] {
		if p.claim == nil && p.pod != nil && (p.uid == e.claim.owner || names(p.pod, e.name)) {
			users = append(users, p.timeline)
		}
	}
	e.timeline = burn.ClaimTimeline(e.claim.charge, users)
	if d := e.obs.Deleted; !d.IsZero() && len(e.timeline.Segments) > 0 && (e.timeline.End.IsZero() || d.Before(e.timeline.End)) {
		e.timeline.End = d
	}
}

// names reports whether pod names the claim directly.
func names(pod *corev1.Pod, claim string) bool {
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil && *rc.ResourceClaimName == claim {
			return true
		}
	}
	return false
}

// refreshClaimsLocked recomputes the timelines of namespace ns's claims
// (a pod of it changed).
func (t *Tracker) refreshClaimsLocked(ns string) {
	for _, e := range t.claimsByNS[ns] {
		t.claimTimelineLocked(e)
	}
}

// addLocked indexes a new entry.
func (t *Tracker) addLocked(e *podEntry) {
	e.obs.Tolerance = t.opts.Tolerance
	t.pods[e.uid] = e
	if t.byNS[e.namespace] == nil {
		t.byNS[e.namespace] = map[types.UID]*podEntry{}
	}
	t.byNS[e.namespace][e.uid] = e
	if e.claim == nil {
		k := types.NamespacedName{Namespace: e.namespace, Name: e.name}
		if t.byName[k] == nil {
			t.byName[k] = map[types.UID]*podEntry{}
		}
		t.byName[k][e.uid] = e
	}
	if e.claim != nil {
		if t.claimsByNS[e.namespace] == nil {
			t.claimsByNS[e.namespace] = map[types.UID]*podEntry{}
		}
		t.claimsByNS[e.namespace][e.uid] = e
	}
}
