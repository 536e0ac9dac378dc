package burn

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Observed is what one replica saw of a pod itself, with its own clock:
// the bounds on the timestamps the node writes. A zero time is "not seen".
type Observed struct {
	// FirstRunning is the first time the replica saw a container of the
	// pod started (running or terminated); LastRunning the last time it
	// saw one running while the pod was not terminal.
	FirstRunning, LastRunning time.Time
	// EarliestStart is the earliest container startedAt the replica has
	// seen on the pod (a node rewriting it later is ignored);
	// LatestFinish the latest container finishedAt it has seen.
	EarliestStart, LatestFinish time.Time
	// Deleted is when the replica saw the pod deleted.
	Deleted time.Time
	// StageSeen is, per Stage.From, the last time the replica saw the pod
	// at that stage while it was not terminal: an init container cannot
	// have finished before the replica last saw it count (less
	// Tolerance). Nil: no such bound.
	StageSeen map[int]time.Time
	// Tolerance is budgets.clockTolerance: how far a node may shorten a
	// run below what the replica saw (and the replicas' clocks may differ).
	Tolerance time.Duration
}

// PodTimeline is what pod burns (THE BURN RULE, docs/budgets.md): the
// ledger's charge of each lifecycle stage (chargeOf; full until its
// regular init containers finish, lower as each exits 0, then steady) from
// its first container's start until its containers end (phase Succeeded or
// Failed) or it is deleted. Node-written timestamps are bounded by obs:
//
//	start = max(creationTimestamp, min(startedAt, obs.FirstRunning))
//	end   = max(finishedAt, obs.LastRunning - obs.Tolerance)
//
// with startedAt the earliest seen and finishedAt the latest seen. A pod
// that never started burns nothing (no segment), and so does a nil pod.
// chargeOf is called only with the stages the pod went through and must
// not be nil.
func PodTimeline(pod *corev1.Pod, chargeOf func(effective.Stage) effective.Usage, obs Observed) Timeline {
	if pod == nil {
		return Timeline{}
	}
	start, ok := podStart(pod, obs)
	if !ok {
		return Timeline{}
	}
	end := podEnd(pod, obs)
	if !end.IsZero() && !end.After(start) {
		return Timeline{}
	}
	return Timeline{Segments: podSegments(pod, chargeOf, obs, start, end), End: end}
}

// podStart is start' (false: the pod never started).
func podStart(pod *corev1.Pod, obs Observed) (time.Time, bool) {
	started := earliest(earliestStart(pod), obs.EarliestStart)
	started = earliest(started, obs.FirstRunning)
	started = earliest(started, obs.LastRunning) // seen running, FirstRunning lost
	if started.IsZero() {
		return time.Time{}, false
	}
	if created := pod.CreationTimestamp.Time; started.Before(created) {
		started = created
	}
	return started, true
}

// podEnd is end' (zero: still burning).
func podEnd(pod *corev1.Pod, obs Observed) time.Time {
	var end time.Time
	if p := pod.Status.Phase; p == corev1.PodSucceeded || p == corev1.PodFailed {
		end = latest(latestFinish(pod), obs.LatestFinish)
		if !obs.LastRunning.IsZero() {
			end = latest(end, obs.LastRunning.Add(-obs.Tolerance))
		}
		if end.IsZero() {
			// Terminal with no finish written and never seen running: it
			// burned nothing that can be bounded; end it at its start.
			end = pod.CreationTimestamp.Time
		}
	}
	if !obs.Deleted.IsZero() && (end.IsZero() || obs.Deleted.Before(end)) {
		end = obs.Deleted
	}
	return end
}

// earliest is the earlier of two times, a zero time being absent.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// latest is the later of two times, a zero time being absent.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// allStatuses visits the init and regular containers' statuses.
func allStatuses(pod *corev1.Pod, visit func(*corev1.ContainerStatus)) {
	for i := range pod.Status.InitContainerStatuses {
		visit(&pod.Status.InitContainerStatuses[i])
	}
	for i := range pod.Status.ContainerStatuses {
		visit(&pod.Status.ContainerStatuses[i])
	}
}

// earliestStart is the earliest startedAt of any container state.
func earliestStart(pod *corev1.Pod) time.Time {
	var t time.Time
	allStatuses(pod, func(st *corev1.ContainerStatus) {
		if r := st.State.Running; r != nil {
			t = earliest(t, r.StartedAt.Time)
		}
		if x := st.State.Terminated; x != nil {
			t = earliest(t, x.StartedAt.Time)
			t = earliest(t, x.FinishedAt.Time) // ran, even if startedAt is missing
		}
		if x := st.LastTerminationState.Terminated; x != nil {
			t = earliest(t, x.StartedAt.Time)
			t = earliest(t, x.FinishedAt.Time)
		}
	})
	return t
}

// latestFinish is the latest finishedAt of any container state.
func latestFinish(pod *corev1.Pod) time.Time {
	var t time.Time
	allStatuses(pod, func(st *corev1.ContainerStatus) {
		if x := st.State.Terminated; x != nil {
			t = latest(t, x.FinishedAt.Time)
		}
		if x := st.LastTerminationState.Terminated; x != nil {
			t = latest(t, x.FinishedAt.Time)
		}
	})
	return t
}
