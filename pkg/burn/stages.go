package burn

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// initDone is a regular init container (its index in spec.initContainers)
// and when it exited 0 (zero: it has not).
type initDone struct {
	index int
	at    time.Time
	// rerun: the container terminated before (its status shows a last
	// termination): its exit may be a later cycle's than the one a replica
	// saw the pod past.
	rerun bool
}

// podSegments is the pod's charge over [start, end): a segment at start
// and one more each time a regular init container's exit lowers it.
func podSegments(pod *corev1.Pod, chargeOf func(effective.Stage) effective.Usage, obs Observed, start, end time.Time) []Segment {
	inits := regularInits(pod, obs, start)
	n := len(pod.Spec.InitContainers)
	changes := []time.Time{start}
	for _, d := range inits {
		if d.at.After(start) && (end.IsZero() || d.at.Before(end)) {
			changes = append(changes, d.at)
		}
	}
	slices.SortFunc(changes, time.Time.Compare)
	changes = slices.CompactFunc(changes, time.Time.Equal)
	now := effective.StageOf(pod)
	segs := make([]Segment, 0, len(changes))
	last := -1
	for _, t := range changes {
		st := stageAt(inits, n, t)
		if st.From == last {
			continue
		}
		last = st.From
		if now.State != effective.StateZero && now.From == st.From {
			st = now // the ledger's own stage (hold, re-expanded) at its charge
		}
		segs = append(segs, Segment{From: t, Charge: chargeOf(st)})
	}
	return segs
}

// regularInits lists the pod's regular init containers in spec order with
// when each exited 0, each at the earliest at start and bounded by the
// stages the replica saw (obs.StageSeen: notBefore; obs.StageFirstSeen:
// notAfter).
func regularInits(pod *corev1.Pod, obs Observed, start time.Time) []initDone {
	statuses := make(map[string]*corev1.ContainerStatus, len(pod.Status.InitContainerStatuses))
	for i := range pod.Status.InitContainerStatuses {
		statuses[pod.Status.InitContainerStatuses[i].Name] = &pod.Status.InitContainerStatuses[i]
	}
	var out []initDone
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if effective.InitRole(c) != effective.RoleInit {
			continue
		}
		d := initDone{index: i}
		if st := statuses[c.Name]; exitedZero(st) {
			d.at = latest(st.State.Terminated.FinishedAt.Time, start)
			d.rerun = st.LastTerminationState.Terminated != nil
		}
		out = append(out, d)
	}
	for from, seen := range obs.StageSeen {
		notBefore(out, from, seen.Add(-obs.Tolerance))
	}
	for from, seen := range obs.StageFirstSeen {
		notAfter(out, from, seen.Add(obs.Tolerance))
	}
	return out
}

// notBefore: the pod was seen at a stage whose first counting regular
// init container is from at bound (+ tolerance): that one had not exited 0
// before bound. A container not shown exited 0 now is left alone.
func notBefore(out []initDone, from int, bound time.Time) {
	for j := range out {
		if d := &out[j]; d.index == from && !d.at.IsZero() {
			d.at = latest(d.at, bound)
		}
	}
}

// notAfter: the pod was first seen at the stage from at bound (-
// tolerance): the regular init containers before from had exited 0 by
// then. A container not shown exited 0 now, or that ran before (its exit
// may end a later cycle: the ledger's re-expanded stage), is left alone.
func notAfter(out []initDone, from int, bound time.Time) {
	for j := range out {
		if d := &out[j]; d.index < from && !d.rerun && d.at.After(bound) {
			d.at = bound
		}
	}
}

// exitedZero: terminated with exit code 0 and not running or waiting again.
func exitedZero(st *corev1.ContainerStatus) bool {
	return st != nil && st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 &&
		st.State.Running == nil && st.State.Waiting == nil
}

// stageAt is the stage at t: the first regular init container not yet
// exited 0 at t and the ones after it still count (effective.StageOf's
// rule, by time).
func stageAt(inits []initDone, n int, t time.Time) effective.Stage {
	if len(inits) == 0 {
		return effective.Stage{State: effective.StateFull, From: n}
	}
	for k, d := range inits {
		if d.at.IsZero() || d.at.After(t) {
			if k == 0 {
				return effective.Stage{State: effective.StateFull, From: d.index}
			}
			return effective.Stage{State: effective.StateProgressive, From: d.index}
		}
	}
	return effective.Stage{State: effective.StateSteady, From: n}
}
