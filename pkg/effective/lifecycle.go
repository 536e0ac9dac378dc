package effective

import (
	corev1 "k8s.io/api/core/v1"
)

// State names the lifecycle state of a pod's stored GPU usage.
type State string

// Lifecycle states (docs/design.md, the ledger).
const (
	// StateFull: created and not terminal, init containers not started or the
	// first one still running: the full effective demand (init peak included).
	StateFull State = "full"
	// StateProgressive: some regular init containers exited 0; only the
	// remaining ones still count toward the init peak.
	StateProgressive State = "progressive"
	// StateSteady: every regular init container exited 0: apps + sidecars.
	StateSteady State = "steady"
	// StateHold: an init container exited non-zero and the pod is not
	// terminal: it may retry, so it keeps that init container's demand.
	StateHold State = "hold"
	// StateReExpanded: an init container runs again after a finished init
	// cycle (sandbox restart): the init-inclusive demand is restored.
	StateReExpanded State = "re-expanded"
	// StateZero: phase Succeeded or Failed: nothing runs any more.
	StateZero State = "zero"
)

// Stage is where a pod is in its lifecycle: its state and the index in
// spec.initContainers from which regular init containers still count.
type Stage struct {
	State State
	// From is the first index of spec.initContainers whose regular init
	// container still counts; len(spec.initContainers) when none does.
	From int
}

// StageOf derives the lifecycle stage from the pod object alone (spec and
// status), never from the order of events seen, so a relist after a restart
// lands every pod straight in the state its status shows.
//
// The rule: regular init containers run in order, so the first one that is
// running or waiting, or that has not exited 0, and every regular init
// container after it still count. Statuses are matched by container name.
func StageOf(pod *corev1.Pod) Stage {
	inits := pod.Spec.InitContainers
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return Stage{State: StateZero, From: len(inits)}
	}
	statuses := make(map[string]*corev1.ContainerStatus, len(pod.Status.InitContainerStatuses))
	for i := range pod.Status.InitContainerStatuses {
		statuses[pod.Status.InitContainerStatuses[i].Name] = &pod.Status.InitContainerStatuses[i]
	}
	firstRegular, from := -1, len(inits)
	for i := range inits {
		if InitRole(&inits[i]) != RoleInit {
			continue
		}
		if firstRegular < 0 {
			firstRegular = i
		}
		st := statuses[inits[i].Name]
		if !exitedZero(st) || active(st) {
			from = i
			break
		}
	}
	switch {
	case firstRegular < 0:
		return Stage{State: StateFull, From: len(inits)}
	case from == len(inits):
		return Stage{State: StateSteady, From: from}
	}
	st := statuses[inits[from].Name]
	switch {
	case failed(st):
		return Stage{State: StateHold, From: from}
	case active(st) && finishedCycleAfter(pod, statuses, from):
		return Stage{State: StateReExpanded, From: from}
	case from == firstRegular:
		return Stage{State: StateFull, From: from}
	default:
		return Stage{State: StateProgressive, From: from}
	}
}

func exitedZero(st *corev1.ContainerStatus) bool {
	return st != nil && st.State.Terminated != nil && st.State.Terminated.ExitCode == 0
}

func active(st *corev1.ContainerStatus) bool {
	return st != nil && (st.State.Running != nil || st.State.Waiting != nil)
}

// failed: terminated non-zero, or restarting (waiting/running) after a non-zero exit.
func failed(st *corev1.ContainerStatus) bool {
	if st == nil {
		return false
	}
	if t := st.State.Terminated; t != nil {
		return t.ExitCode != 0
	}
	t := st.LastTerminationState.Terminated
	return t != nil && t.ExitCode != 0
}

// finishedCycleAfter reports evidence that the pod already completed an init
// cycle although the init container at index from is active again: a later
// (or this) regular init container shows a clean exit, or an app container has
// started before.
func finishedCycleAfter(pod *corev1.Pod, statuses map[string]*corev1.ContainerStatus, from int) bool {
	inits := pod.Spec.InitContainers
	if st := statuses[inits[from].Name]; st != nil {
		if t := st.LastTerminationState.Terminated; t != nil && t.ExitCode == 0 {
			return true
		}
	}
	for i := from + 1; i < len(inits); i++ {
		if InitRole(&inits[i]) == RoleInit && exitedZero(statuses[inits[i].Name]) {
			return true
		}
	}
	for i := range pod.Status.ContainerStatuses {
		st := &pod.Status.ContainerStatuses[i]
		if st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// Target is the usage the ledger stores for a pod at its current stage.
type Target struct {
	Stage Stage
	// Namespace is the pod-level demand charged to its namespace, per family.
	Namespace Usage
	// Devices is the per-UUID usage (nil when no devices are assigned).
	Devices map[string]Vector
}

// TargetOf computes the lifecycle target of pod from its demand d (computed
// by ComputeAll for the same pod) and its device assignments (nil if none).
func TargetOf(pod *corev1.Pod, d Demands, assign Assignment) (Target, error) {
	stage := StageOf(pod)
	t := Target{Stage: stage}
	if stage.State == StateZero {
		return t, nil
	}
	ns, err := d.From(stage.From)
	if err != nil {
		return Target{}, err
	}
	t.Namespace = ns
	if len(assign) > 0 {
		devs, err := CollapseDevices(pod, assign, stage.From)
		if err != nil {
			return Target{}, err
		}
		t.Devices = devs
	}
	return t, nil
}
