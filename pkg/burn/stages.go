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
// when each exited 0, each at the earliest at start and no earlier than
// the replica last saw the pod at the stage it starts (obs.StageSeen,
// less the tolerance).
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
		}
		out = append(out, d)
	}
	for from, seen := range obs.StageSeen {
		// Seen at a stage whose first counting init container is from: that
		// one had not exited 0 then (a steady stage bounds nothing).
		for j := range out {
			if out[j].index == from && !out[j].at.IsZero() {
				out[j].at = latest(out[j].at, seen.Add(-obs.Tolerance))
			}
		}
	}
	return out
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
