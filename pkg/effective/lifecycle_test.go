package effective_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// threeInits: sidecar s (1000), inits a (8000), b (6000), c (3000), app (2000).
//
//	steady = app 2000 + sidecar 1000 = 3000
//	peaks: a 9000, b 7000, c 4000
func threeInits() *testpod.Builder {
	return testpod.New("p").Sidecar("s", gpu(1), mem(1000)).
		Init("a", gpu(1), mem(8000)).Init("b", gpu(1), mem(6000)).Init("c", gpu(1), mem(3000)).
		App("app", gpu(1), mem(2000))
}

func TestStageAndTarget(t *testing.T) {
	tests := []struct {
		name      string
		pod       *testpod.Builder
		wantState effective.State
		wantMem   int64
	}{
		{"created, no status: full", threeInits(), effective.StateFull, 9000},
		{"first init running: full", threeInits().InitRunning("s").InitRunning("a"), effective.StateFull, 9000},
		{"first init exited 0, second running: progressive",
			threeInits().InitRunning("s").InitTerminated("a", 0).InitRunning("b"), effective.StateProgressive, 7000},
		{"two inits exited 0, third waiting: progressive",
			threeInits().InitTerminated("a", 0).InitTerminated("b", 0).InitWaiting("c"), effective.StateProgressive, 4000},
		{"all inits exited 0: steady",
			threeInits().InitRunning("s").InitTerminated("a", 0).InitTerminated("b", 0).InitTerminated("c", 0).AppRunning("app"),
			effective.StateSteady, 3000},
		{"init exited non-zero: hold (keeps that init)",
			threeInits().InitTerminated("a", 0).InitTerminated("b", 1), effective.StateHold, 7000},
		{"first init exited non-zero: hold at full",
			threeInits().InitTerminated("a", 137), effective.StateHold, 9000},
		{"init retrying after non-zero exit: hold",
			threeInits().InitTerminated("a", 0).InitRestarted("b", 1), effective.StateHold, 7000},
		{"new init cycle after steady: re-expanded",
			threeInits().InitRunning("a").InitTerminated("b", 0).InitTerminated("c", 0).AppRunning("app"),
			effective.StateReExpanded, 9000},
		{"re-run after a clean exit: re-expanded",
			threeInits().InitRestarted("a", 0), effective.StateReExpanded, 9000},
		{"app started before, first init waiting: re-expanded",
			threeInits().InitWaiting("a").AppRunning("app"), effective.StateReExpanded, 9000},
		{"succeeded: zero", threeInits().Phase(corev1.PodSucceeded), effective.StateZero, 0},
		{"failed with inits pending: zero", threeInits().InitTerminated("a", 1).Phase(corev1.PodFailed), effective.StateZero, 0},
		{"no init containers: full", testpod.New("p").App("a", gpu(1), mem(500)), effective.StateFull, 500},
		{"only sidecars: full", testpod.New("p").Sidecar("s", gpu(1), mem(100)).App("a", gpu(1), mem(500)), effective.StateFull, 600},
		{"statuses matched by name, not position",
			testpod.New("p").Init("x", gpu(1), mem(5000)).Init("y", gpu(1), mem(4000)).App("a", gpu(1), mem(100)).
				InitRunning("y").InitTerminated("x", 0), effective.StateProgressive, 4000},
		{"GPU-less init running before GPU apps: full",
			testpod.New("p").Init("setup", testpod.CPU("1")).App("a", gpu(1), mem(1000)).InitRunning("setup"),
			effective.StateFull, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.Build()
			d, err := effective.ComputeAll(pod, []effective.Family{defset}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tgt, err := effective.TargetOf(pod, d, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tgt.Stage.State != tt.wantState {
				t.Errorf("state = %s, want %s", tgt.Stage.State, tt.wantState)
			}
			if got := tgt.Namespace.Of("nvidia").MemMiB; got != tt.wantMem || len(tgt.Namespace.Families()) > 1 {
				t.Errorf("namespace usage = %v, want nvidia gpumem %d", tgt.Namespace, tt.wantMem)
			}
			if tgt.Devices != nil {
				t.Errorf("devices = %v without an assignment", tgt.Devices)
			}
		})
	}
}

func TestTargetPerDevice(t *testing.T) {
	seed := func() *testpod.Builder {
		return testpod.New("p").Init("convert", gpu(1), mem(20480)).App("server", gpu(1), mem(10240))
	}
	split := effective.Assignment{"convert": {{UUID: "GPU-c", MemMiB: 20480}}, "server": {{UUID: "GPU-d", MemMiB: 10240, Cores: 5}}}
	same := effective.Assignment{"convert": {{UUID: "GPU-a", MemMiB: 20480, Cores: 10}}, "server": {{UUID: "GPU-a", MemMiB: 10240, Cores: 5}}}
	tests := []struct {
		name   string
		pod    *testpod.Builder
		assign effective.Assignment
		wantNS int64
		want   map[string]effective.Vector
	}{
		{"same device, init running", seed().InitRunning("convert"), same, 20480,
			map[string]effective.Vector{"GPU-a": vec(1, 20480, 10)}},
		{"same device, init done", seed().InitTerminated("convert", 0), same, 10240,
			map[string]effective.Vector{"GPU-a": vec(1, 10240, 5)}},
		{"split devices are never merged", seed().InitRunning("convert"), split, 20480,
			map[string]effective.Vector{"GPU-c": vec(1, 20480, 0), "GPU-d": vec(1, 10240, 5)}},
		{"split devices, init done: init device released", seed().InitTerminated("convert", 0), split, 10240,
			map[string]effective.Vector{"GPU-d": vec(1, 10240, 5)}},
		{"terminal pod: nothing", seed().Phase(corev1.PodSucceeded), same, 0, nil},
		{"sidecar shares a device with a later init",
			testpod.New("p").Sidecar("s", gpu(1), mem(1000)).Init("i", gpu(1), mem(3000)).App("a", gpu(1), mem(500)),
			effective.Assignment{"s": {{UUID: "GPU-a", MemMiB: 1000}}, "i": {{UUID: "GPU-a", MemMiB: 3000}}, "a": {{UUID: "GPU-b", MemMiB: 500}}},
			4000, map[string]effective.Vector{"GPU-a": vec(2, 4000, 0), "GPU-b": vec(1, 500, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.Build()
			d, err := effective.ComputeAll(pod, []effective.Family{defset}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tgt, err := effective.TargetOf(pod, d, tt.assign)
			if err != nil {
				t.Fatal(err)
			}
			if got := tgt.Namespace.Of("nvidia").MemMiB; got != tt.wantNS || len(tgt.Namespace.Families()) > 1 {
				t.Errorf("namespace usage = %v, want nvidia gpumem %d", tgt.Namespace, tt.wantNS)
			}
			if len(tgt.Devices) != len(tt.want) {
				t.Fatalf("devices = %v, want %v", tgt.Devices, tt.want)
			}
			for id, w := range tt.want {
				if tgt.Devices[id] != w {
					t.Errorf("device %s = %v, want %v", id, tgt.Devices[id], w)
				}
			}
		})
	}
}

func TestCollapseDevicesRejectsUnknownContainer(t *testing.T) {
	pod := testpod.New("p").App("a", gpu(1)).Build()
	_, err := effective.CollapseDevices(pod, effective.Assignment{"ghost": {{UUID: "GPU-a", MemMiB: 1}}}, 0)
	if err == nil || err.Error() != `device assignment names container "ghost", which the pod does not have` {
		t.Fatalf("err = %v", err)
	}
}
