package budget

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// podEntry is one GPU pod as this replica tracks it: its last object, what
// the replica saw of it, and its timeline.
type podEntry struct {
	uid       types.UID
	namespace string
	name      string
	user      string
	pod       *corev1.Pod
	obs       burn.Observed
	timeline  burn.Timeline
	// sizes are the device sizes the ledger last resolved the pod's memory
	// against (Options.Sizes).
	sizes map[string]effective.Options
	// claim is set on a ResourceClaim's entry (claims.go).
	claim *claimInfo
}

func (e *podEntry) deleted() bool { return !e.obs.Deleted.IsZero() }

// uidOf is a pod's key: its UID, or namespace/name for objects without one.
func uidOf(m metav1.Object) types.UID {
	if uid := m.GetUID(); uid != "" {
		return uid
	}
	return types.UID(m.GetNamespace() + "/" + m.GetName())
}

// UpsertPod records what the pod's object says now and what this replica
// sees of it (an add, an update, a resync or a relist: all the same). A
// pod that requests no governed resource and uses no claim burns nothing
// and is not kept (one using claims is: its runs are its claims').
func (t *Tracker) UpsertPod(pod *corev1.Pod) {
	if !effective.RequestsAny(pod, t.opts.Families) && len(pod.Spec.ResourceClaims) == 0 {
		return
	}
	now := t.clock.Now()
	var user string
	if t.opts.Users != nil {
		user = t.opts.Users.UserOf(pod)
	}
	uid := uidOf(pod)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, gone := t.gone[uid]; gone {
		return // deleted and folded: a lagging list still showing it
	}
	e := t.pods[uid]
	if e == nil {
		t.replaceSameNameLocked(pod, uid, now)
		e = &podEntry{uid: uid, namespace: pod.Namespace, name: pod.Name, user: user}
		t.addLocked(e)
	}
	if e.deleted() || e.claim != nil {
		return // a lagging list still showing a pod seen deleted
	}
	seenUntil(e, now)
	e.pod = pod
	observe(&e.obs, pod, now)
	e.timeline = burn.PodTimeline(pod, t.chargeOf(e, pod), e.obs)
	t.refreshClaimsLocked(pod.Namespace)
	t.bumpLocked(pod.Namespace)
}

// replaceSameNameLocked ends an older pod of the same namespace and name
// (deleted and recreated while the watch was down: the relist only shows
// the new one).
func (t *Tracker) replaceSameNameLocked(pod *corev1.Pod, uid types.UID, now time.Time) {
	for other, e := range t.byName[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] {
		if other != uid && !e.deleted() {
			t.endLocked(e, nil, now)
		}
	}
}

// chargeOf is the ledger's charge of pod at each lifecycle stage (nothing
// for a pod the ledger finds invalid: it charges nothing), its memory
// percentages and whole devices resolved against the device sizes the
// ledger resolves them against (the last sizes it told for e: a deleted
// pod's are those it had).
func (t *Tracker) chargeOf(e *podEntry, pod *corev1.Pod) func(effective.Stage) effective.Usage {
	if t.opts.Sizes != nil {
		if s := t.opts.Sizes.PodSizes(pod); s != nil {
			e.sizes = s
		}
	}
	ds, err := effective.ComputeAll(pod, t.opts.Families, e.sizes)
	return func(st effective.Stage) effective.Usage {
		if err != nil || st.State == effective.StateZero {
			return nil
		}
		u, err := ds.From(st.From)
		if err != nil {
			return nil
		}
		return u
	}
}

// seenUntil records that the pod's last object was still its state at
// now (no event said otherwise until now): running, and in its lifecycle
// stage, up to now. A node then cannot end a quiet run at its last status
// event by reporting an early finishedAt (or an init container's early
// exit): the run lasts, within the tolerance, until the terminal or
// deleted object arrives.
func seenUntil(e *podEntry, now time.Time) {
	if e.pod != nil && !terminal(e.pod) {
		observe(&e.obs, e.pod, now)
	}
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// observe records what the replica sees of pod at now: first and last
// seen running, the earliest startedAt and latest finishedAt written, the
// last time each lifecycle stage was seen.
func observe(obs *burn.Observed, pod *corev1.Pod, now time.Time) {
	ended := terminal(pod)
	started, running := false, false
	each(pod, func(st *corev1.ContainerStatus) {
		started = started || st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil
		running = running || st.State.Running != nil
		observeTimes(obs, st)
	})
	if started && obs.FirstRunning.IsZero() {
		obs.FirstRunning = now
	}
	if running && !ended {
		obs.LastRunning = now
	}
	if !ended {
		if obs.StageSeen == nil {
			obs.StageSeen = map[int]time.Time{}
		}
		obs.StageSeen[effective.StageOf(pod).From] = now
	}
}

// observeTimes keeps the earliest startedAt and the latest finishedAt a
// container status shows.
func observeTimes(obs *burn.Observed, st *corev1.ContainerStatus) {
	if r := st.State.Running; r != nil {
		obs.EarliestStart = earliest(obs.EarliestStart, r.StartedAt.Time)
	}
	for _, x := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
		if x != nil {
			obs.EarliestStart = earliest(obs.EarliestStart, x.StartedAt.Time)
			if x.FinishedAt.After(obs.LatestFinish) {
				obs.LatestFinish = x.FinishedAt.Time
			}
		}
	}
}

func each(pod *corev1.Pod, visit func(*corev1.ContainerStatus)) {
	for i := range pod.Status.InitContainerStatuses {
		visit(&pod.Status.InitContainerStatuses[i])
	}
	for i := range pod.Status.ContainerStatuses {
		visit(&pod.Status.ContainerStatuses[i])
	}
}

// earliest is the earlier of two times, a zero time being absent.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// DeletePod records that this replica saw the pod deleted now: its
// timeline ends now at the latest, and its burn counts until a checkpoint
// folds it.
func (t *Tracker) DeletePod(pod *corev1.Pod) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.pods[uidOf(pod)]; e != nil && e.claim == nil && !e.deleted() {
		final := pod
		if !effective.RequestsAny(pod, t.opts.Families) && len(pod.Spec.ResourceClaims) == 0 {
			final = nil // a tombstone's metadata only
		}
		t.endLocked(e, final, now)
	}
	t.sweepLocked(now)
}

// DeletePodByName is DeletePod for a pod known by name only.
func (t *Tracker) DeletePodByName(namespace, name string) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.byName[types.NamespacedName{Namespace: namespace, Name: name}] {
		if !e.deleted() {
			t.endLocked(e, nil, now)
		}
	}
	t.sweepLocked(now)
}

// ReplacePods takes a list's pods: every pod tracked that the list lacks
// was deleted while the watch was down (seen deleted now), every listed
// pod is recorded.
func (t *Tracker) ReplacePods(pods []metav1.Object) {
	listed := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		listed[uidOf(p)] = true
	}
	now := t.clock.Now()
	t.mu.Lock()
	for uid, e := range t.pods {
		if !listed[uid] && e.claim == nil && !e.deleted() {
			t.endLocked(e, nil, now)
		}
	}
	t.mu.Unlock()
	for _, p := range pods {
		if pod, ok := p.(*corev1.Pod); ok {
			t.UpsertPod(pod)
		}
	}
	t.mu.Lock()
	t.sweepLocked(now)
	t.mu.Unlock()
}

// endLocked marks e deleted at now, its final object final when known.
func (t *Tracker) endLocked(e *podEntry, final *corev1.Pod, now time.Time) {
	seenUntil(e, now)
	if final != nil {
		e.pod = final
		observe(&e.obs, final, now)
	}
	e.obs.Deleted = now
	t.tombstones[e.uid] = e
	t.ended = append(t.ended, e)
	if e.pod != nil {
		e.timeline = burn.PodTimeline(e.pod, t.chargeOf(e, e.pod), e.obs)
	}
	t.refreshClaimsLocked(e.namespace)
	t.bumpLocked(e.namespace)
}

// sweepLocked drops, after a pod or claim event, the deleted entries no
// budget needs: those the event ended (t.ended) at once, every tombstone
// at most once per checkpoint interval. What makes an older tombstone
// droppable changes only with a budget's checkpoint (store sweeps them
// all then) or with time (a window's rollover, gone's expiry), so a burst
// of deletions under the write lock stays linear instead of
// O(deletions × tombstones × budgets).
func (t *Tracker) sweepLocked(now time.Time) {
	ended := t.ended
	t.ended = nil
	if now.Sub(t.lastSweep) >= t.opts.CheckpointInterval || now.Before(t.lastSweep) {
		t.dropFoldedLocked()
		return
	}
	starts := t.windowStartsLocked(now)
	for _, e := range ended {
		if t.tombstones[e.uid] == e && !t.neededLocked(e, starts) {
			t.dropLocked(e, now)
		}
	}
}

// dropFoldedLocked forgets the deleted pods no budget needs any more:
// every budget that counts them folded them (a checkpoint's foldedPods
// entry up to their end), or their burn is before its window. Their UIDs
// are kept keepDeletedFor checkpoint intervals (gone), so that a lagging
// list still showing them does not bring them back.
func (t *Tracker) dropFoldedLocked() {
	now := t.clock.Now()
	t.lastSweep = now
	t.ended = nil
	for uid, at := range t.gone {
		if now.Sub(at) > keepDeletedFor*t.opts.CheckpointInterval {
			delete(t.gone, uid)
		}
	}
	starts := t.windowStartsLocked(now)
	for _, e := range t.tombstones {
		if !t.neededLocked(e, starts) {
			t.dropLocked(e, now)
		}
	}
}

// windowStartsLocked is each budget's window start at now.
func (t *Tracker) windowStartsLocked(now time.Time) map[*tracked]time.Time {
	starts := make(map[*tracked]time.Time, len(t.budgets))
	for _, b := range t.budgets {
		starts[b], _ = b.window.At(now)
	}
	return starts
}

// dropLocked forgets the deleted entry e (its UID kept in gone).
func (t *Tracker) dropLocked(e *podEntry, now time.Time) {
	uid := e.uid
	delete(t.tombstones, uid)
	t.gone[uid] = now
	t.forgetReleasedLocked(uid)
	t.bumpLocked(e.namespace)
	delete(t.pods, uid)
	delete(t.byNS[e.namespace], uid)
	if len(t.byNS[e.namespace]) == 0 {
		delete(t.byNS, e.namespace)
	}
	if k := (types.NamespacedName{Namespace: e.namespace, Name: e.name}); e.claim == nil {
		delete(t.byName[k], uid)
		if len(t.byName[k]) == 0 {
			delete(t.byName, k)
		}
	}
	if e.claim != nil {
		delete(t.claimsByNS[e.namespace], uid)
		if len(t.claimsByNS[e.namespace]) == 0 {
			delete(t.claimsByNS, e.namespace)
		}
	}
}

// neededLocked reports whether some budget still counts the deleted pod e
// from this replica's tombstone.
func (t *Tracker) neededLocked(e *podEntry, starts map[*tracked]time.Time) bool {
	t.checks++
	end := e.timeline.End
	if len(e.timeline.Segments) == 0 || end.IsZero() {
		return false
	}
	lbl, known := t.namespaces[e.namespace]
	for _, b := range t.budgets {
		_, departed := b.departed[e.uid]
		if !departed && !b.selects(e.namespace, lbl, known) {
			continue
		}
		if until, ok := b.untilIn(&b.cp, e.uid); ok && !until.Before(end) {
			continue
		}
		if !end.After(starts[b]) {
			continue // its burn is before the window
		}
		return true
	}
	return false
}
