package ledger

import (
	"maps"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestSeedScenarios3And4: while the init container runs the pod holds 20 GiB
// (not 30); once it exited 0 it holds 10 GiB, and a 12 GiB pod then fits the
// 24 GiB quota.
func TestSeedScenarios3And4(t *testing.T) {
	l := newLedger(t)
	l.UpsertNode(testnode.WithDevices("node1", nil, dev("GPU-0", 24576)))
	l.UpsertQuota(testquota.New("team-a", "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "24576"}))
	small := vec(1, 12288, 0)
	fits := func(s NamespaceSnapshot, d effective.Vector) bool {
		return nvOnly(t, s.Used).MemMiB+nvOnly(t, s.Reserved).MemMiB+d.MemMiB <= s.Limits[nvidia].MemMiB.Value
	}

	l.UpsertPod(seedPod().InitRunning("convert-weights").Build())
	s := l.Namespace("team-a", nil)
	if !same(s.Used, nv(1, 20480, 0)) || deviceUsed(l, "node1", "GPU-0") != vec(1, 20480, 0) {
		t.Fatalf("init running: used %v, device %v; want 20480 MiB for both", s.Used, deviceUsed(l, "node1", "GPU-0"))
	}
	if lim := s.Limits[nvidia].MemMiB; lim == nil || lim.Value != 24576 || lim.Quota != "gpu-quota" || len(s.Limits) != 1 {
		t.Fatalf("limits = %+v, want 24576 MiB of nvidia from gpu-quota", s.Limits)
	}
	if fits(s, small) {
		t.Errorf("scenario 3: a 12 GiB pod must not fit while the 20 GiB init runs (used %d)", nvOnly(t, s.Used).MemMiB)
	}

	l.UpsertPod(seedPod().InitTerminated("convert-weights", 0).AppRunning("server").Build())
	s = l.Namespace("team-a", nil)
	if !same(s.Used, nv(1, 10240, 0)) || deviceUsed(l, "node1", "GPU-0") != vec(1, 10240, 0) {
		t.Fatalf("init done: used %v, device %v; want 10240 MiB for both", s.Used, deviceUsed(l, "node1", "GPU-0"))
	}
	if !fits(s, small) {
		t.Errorf("scenario 4: 10240 + 12288 <= 24576 must fit, used %d", nvOnly(t, s.Used).MemMiB)
	}
}

// step is one version of a pod delivered to the ledger, or its deletion.
type step struct {
	pod     *testpod.Builder
	del     bool
	state   effective.State
	nsMem   int64
	devices map[string]int64 // device UUID -> MiB
}

func TestLifecycle(t *testing.T) {
	// three regular inits 8000/6000/3000 with a 1000 MiB sidecar before them, app 2000, all on GPU-a.
	three := func() *testpod.Builder {
		return testpod.New("p").NS("ns").Sidecar("s", gpu(1), mem(1000)).
			Init("a", gpu(1), mem(8000)).Init("b", gpu(1), mem(6000)).Init("c", gpu(1), mem(3000)).
			App("app", gpu(1), mem(2000)).Node("n1").
			Devices("GPU-a,NVIDIA,1000,0:;GPU-a,NVIDIA,8000,0:;GPU-a,NVIDIA,6000,0:;GPU-a,NVIDIA,3000,0:;GPU-a,NVIDIA,2000,0:;")
	}
	seed := func() *testpod.Builder {
		return testpod.New("p").NS("ns").Init("i", gpu(1), mem(20480)).App("c", gpu(1), mem(10240))
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"progressive release, then steady", []step{
			{pod: three(), state: effective.StateFull, nsMem: 9000, devices: map[string]int64{"GPU-a": 9000}},
			{pod: three().InitRunning("s").InitTerminated("a", 0).InitRunning("b"), state: effective.StateProgressive, nsMem: 7000, devices: map[string]int64{"GPU-a": 7000}},
			{pod: three().InitRunning("s").InitTerminated("a", 0).InitTerminated("b", 0).InitRunning("c"), state: effective.StateProgressive, nsMem: 4000, devices: map[string]int64{"GPU-a": 4000}},
			{pod: three().InitRunning("s").InitTerminated("a", 0).InitTerminated("b", 0).InitTerminated("c", 0).AppRunning("app"), state: effective.StateSteady, nsMem: 3000, devices: map[string]int64{"GPU-a": 3000}},
		}},
		{"hold on a non-zero exit, then retry succeeds", []step{
			{pod: three().InitTerminated("a", 0).InitTerminated("b", 1), state: effective.StateHold, nsMem: 7000, devices: map[string]int64{"GPU-a": 7000}},
			{pod: three().InitTerminated("a", 0).InitRestarted("b", 1), state: effective.StateHold, nsMem: 7000, devices: map[string]int64{"GPU-a": 7000}},
			{pod: three().InitTerminated("a", 0).InitTerminated("b", 0).InitRunning("c"), state: effective.StateProgressive, nsMem: 4000, devices: map[string]int64{"GPU-a": 4000}},
		}},
		{"re-expansion on a new init cycle", []step{
			{pod: three().InitTerminated("a", 0).InitTerminated("b", 0).InitTerminated("c", 0).AppRunning("app"), state: effective.StateSteady, nsMem: 3000, devices: map[string]int64{"GPU-a": 3000}},
			{pod: three().InitRunning("a").InitTerminated("b", 0).InitTerminated("c", 0).AppRunning("app"), state: effective.StateReExpanded, nsMem: 9000, devices: map[string]int64{"GPU-a": 9000}},
		}},
		{"Succeeded releases everything", []step{
			{pod: seed().AppRunning("c").InitTerminated("i", 0), state: effective.StateSteady, nsMem: 10240},
			{pod: seed().InitTerminated("i", 0).Phase(corev1.PodSucceeded), nsMem: 0},
		}},
		{"Failed releases everything, even with inits pending", []step{
			{pod: seed(), state: effective.StateFull, nsMem: 20480},
			{pod: seed().InitTerminated("i", 1).Phase(corev1.PodFailed), nsMem: 0},
		}},
		{"deletion subtracts what is stored, whatever the object says", []step{
			{pod: seed().InitRunning("i"), state: effective.StateFull, nsMem: 20480},
			{pod: seed().InitTerminated("i", 0).AppRunning("c"), del: true, nsMem: 0},
			{pod: seed().InitRunning("i"), del: true, nsMem: 0}, // duplicate delete: harmless
		}},
		{"pending pods count toward the namespace, devices once assigned", []step{
			{pod: seed(), state: effective.StateFull, nsMem: 20480},
			{pod: seed().Node("n1"), state: effective.StateFull, nsMem: 20480},
			{pod: seed().Node("n1").Devices("GPU-a,NVIDIA,20480,0:;GPU-a,NVIDIA,10240,0:;").InitRunning("i"), state: effective.StateFull, nsMem: 20480, devices: map[string]int64{"GPU-a": 20480}},
		}},
		{"split devices: init on GPU-c, app on GPU-d", []step{
			{pod: seed().Node("n1").Devices("GPU-c,NVIDIA,20480,0:;GPU-d,NVIDIA,10240,0:;").InitRunning("i"), state: effective.StateFull, nsMem: 20480,
				devices: map[string]int64{"GPU-c": 20480, "GPU-d": 10240}},
			{pod: seed().Node("n1").Devices("GPU-c,NVIDIA,20480,0:;GPU-d,NVIDIA,10240,0:;").InitTerminated("i", 0).AppRunning("c"), state: effective.StateSteady, nsMem: 10240,
				devices: map[string]int64{"GPU-d": 10240}},
		}},
		{"sidecar counts beside later inits and apps", []step{
			{pod: testpod.New("p").NS("ns").Sidecar("proxy", gpu(1), mem(2048)).Init("prep", gpu(1), mem(12288)).App("app", gpu(1), mem(8192)).
				InitRunning("proxy").InitRunning("prep"), state: effective.StateFull, nsMem: 14336},
			{pod: testpod.New("p").NS("ns").Sidecar("proxy", gpu(1), mem(2048)).Init("prep", gpu(1), mem(12288)).App("app", gpu(1), mem(8192)).
				InitRunning("proxy").InitTerminated("prep", 0).AppRunning("app"), state: effective.StateSteady, nsMem: 10240},
		}},
		{"GPU-less init containers: empty annotation segments", []step{
			{pod: testpod.New("p").NS("ns").Init("download", testpod.CPU("1")).Init("convert", gpu(1), mem(20480)).App("app", gpu(1), mem(4096)).
				Node("n1").Devices(";GPU-a,NVIDIA,20480,0:;GPU-a,NVIDIA,4096,0:;").InitRunning("download"),
				state: effective.StateFull, nsMem: 20480, devices: map[string]int64{"GPU-a": 20480}},
			{pod: testpod.New("p").NS("ns").Init("download", testpod.CPU("1")).Init("convert", gpu(1), mem(20480)).App("app", gpu(1), mem(4096)).
				Node("n1").Devices(";GPU-a,NVIDIA,20480,0:;GPU-a,NVIDIA,4096,0:;").InitTerminated("download", 0).InitTerminated("convert", 0).AppRunning("app"),
				state: effective.StateSteady, nsMem: 4096, devices: map[string]int64{"GPU-a": 4096}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(t)
			for i, st := range tt.steps {
				pod := st.pod.Build()
				if st.del {
					l.DeletePod(pod)
				} else {
					l.UpsertPod(pod)
				}
				state, used, devs := stored(l, string(pod.UID))
				if state != st.state || nvOnly(t, used).MemMiB != st.nsMem {
					t.Errorf("step %d: stored state %q, %d MiB; want %q, %d MiB", i, state, nvOnly(t, used).MemMiB, st.state, st.nsMem)
				}
				if got := nvOnly(t, l.Namespace("ns", nil).Used).MemMiB; got != st.nsMem {
					t.Errorf("step %d: namespace used %d MiB, want %d", i, got, st.nsMem)
				}
				gotDevs := map[string]int64{}
				for id, v := range devs {
					gotDevs[id] = v.MemMiB
				}
				for id := range l.Snapshot(nil).Nodes["n1"].Devices {
					if got, want := deviceUsed(l, "n1", id).MemMiB, st.devices[id]; got != want {
						t.Errorf("step %d: device %s sum %d MiB, want %d", i, id, got, want)
					}
				}
				if len(st.devices) > 0 || len(gotDevs) > 0 {
					if !maps.Equal(gotDevs, st.devices) {
						t.Errorf("step %d: stored devices %v, want %v", i, gotDevs, st.devices)
					}
				}
			}
		})
	}
}

// TestRelistAfterRestart: a fresh ledger built from a list places every pod
// straight into the state its status shows: no inflated peak for pods whose
// init containers finished long ago.
func TestRelistAfterRestart(t *testing.T) {
	pods := []*corev1.Pod{
		seedPod().InitTerminated("convert-weights", 0).AppRunning("server").Build(),
		testpod.New("other").NS("team-a").Init("i", gpu(1), mem(9000)).App("c", gpu(1), mem(1000)).InitRunning("i").Build(),
	}
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		l := newLedger(t)
		for _, i := range order {
			l.UpsertPod(pods[i])
		}
		if got := nvOnly(t, l.Namespace("team-a", nil).Used).MemMiB; got != 10240+9000 {
			t.Errorf("order %v: used %d MiB, want %d (steady 10240 + full 9000)", order, got, 10240+9000)
		}
		if state, _, _ := stored(l, string(pods[0].UID)); state != effective.StateSteady {
			t.Errorf("order %v: finished pod stored as %q, want steady", order, state)
		}
		// The informer relists: the same objects again, harmless.
		for _, p := range pods {
			l.UpsertPod(p)
		}
		if got := nvOnly(t, l.Namespace("team-a", nil).Used).MemMiB; got != 10240+9000 {
			t.Errorf("order %v: after relist used %d MiB, want %d", order, got, 10240+9000)
		}
	}
}

// TestRecreatedWithSameName: the pod was deleted and recreated while the
// watch was down; the relist shows only the new object (an update under the
// same key). The old UID's usage must not leak.
func TestRecreatedWithSameName(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(seedPod().UID("old").InitRunning("convert-weights").Build())
	l.UpsertPod(seedPod().UID("new").InitTerminated("convert-weights", 0).AppRunning("server").Build())
	if s := l.Namespace("team-a", nil); nvOnly(t, s.Used).MemMiB != 10240 || s.Pods != 1 {
		t.Errorf("used %d MiB in %d pods, want 10240 in 1", nvOnly(t, s.Used).MemMiB, s.Pods)
	}
	if got := deviceUsed(l, "node1", "GPU-0").MemMiB; got != 10240 {
		t.Errorf("device used %d MiB, want 10240", got)
	}
}

func TestInvalidAndNonGPUPods(t *testing.T) {
	l := newLedger(t)
	bad := testpod.New("bad").NS("ns").App("a", gpu(1), testpod.Res(testpod.MemName, "1500m")).Build()
	l.UpsertPod(bad)
	l.UpsertPod(testpod.New("cpu").NS("ns").App("a", testpod.CPU("2")).Build())
	l.UpsertPod(testpod.New("badannot").NS("ns").App("a", gpu(1), mem(100)).Node("n1").Devices("GPU-a,NVIDIA,x,0:;").Build())
	s := l.Namespace("ns", nil)
	if !same(s.Used, nv(1, 100, 0)) || s.Pods != 1 {
		t.Errorf("used %v in %d pods, want only the pod with the bad annotation (1 GPU, 100 MiB)", s.Used, s.Pods)
	}
	if len(s.Problems) != 2 || s.Problems[0].Name != "bad" || s.Problems[1].Name != "badannot" {
		t.Fatalf("problems = %v, want the invalid pod and the unreadable annotation", s.Problems)
	}
	if st := l.Snapshot(nil).Stats; st.InvalidPods != 1 || st.Pods != 1 {
		t.Errorf("stats = %+v, want 1 invalid, 1 recorded", st)
	}
	if len(l.Snapshot(nil).Nodes) != 0 {
		t.Errorf("nodes = %v, want no device usage from an unreadable annotation", l.Snapshot(nil).Nodes)
	}
	l.DeletePod(bad)
	if s := l.Namespace("ns", nil); len(s.Problems) != 1 {
		t.Errorf("after deleting the invalid pod: problems = %v, want 1", s.Problems)
	}
}

// TestProblemsAreLoggedOnce: an invalid pod, a broken quota and a malformed
// node annotation are logged when they appear, not on every update.
func TestProblemsAreLoggedOnce(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	l := New(Options{Families: []effective.Family{effective.Nvidia()}, Log: log})
	bad := testpod.New("bad").NS("ns").App("a", testpod.Res(testpod.GPUName, "0.5"))
	for range 3 {
		l.UpsertPod(bad.Build())
		l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpu": "2.5"}))
		l.UpsertNode(testnode.Annotated("n1", nil, map[string]string{"gpuadmit.io/gpu-devices": "{"}))
	}
	if len(lines) != 3 {
		t.Fatalf("logged %d lines, want 3 (pod, quota, node):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	l.UpsertPod(bad.Build())
	if len(lines) != 3 {
		t.Errorf("an unchanged problem was logged again: %s", lines[len(lines)-1])
	}
}
