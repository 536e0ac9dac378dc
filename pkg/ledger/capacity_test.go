package ledger

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestNodeCapacity(t *testing.T) {
	agent, err := devices.EncodeNodeDevices([]devices.Device{dev("GPU-agent", 24576)})
	if err != nil {
		t.Fatal(err)
	}
	hami, err := devices.EncodeHAMiNodeRegister([]devices.Device{dev("GPU-hami", 81920), dev("GPU-hami2", 40960)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		annotations map[string]string
		wantSource  string
		wantDevices []string
		wantMax     int64
		wantProblem bool
	}{
		{"gpuadmit annotation", map[string]string{devices.NodeDevicesAnnotation: agent},
			devices.NodeDevicesAnnotation, []string{"GPU-agent"}, 24576, false},
		{"HAMi registration", map[string]string{devices.HAMiNodeRegisterAnnotation: hami},
			devices.HAMiNodeRegisterAnnotation, []string{"GPU-hami", "GPU-hami2"}, 81920, false},
		{"HAMi legacy registration", map[string]string{devices.HAMiNodeRegisterAnnotation: "GPU-l,10,16384,100,NVIDIA-T4,0,true:"},
			devices.HAMiNodeRegisterAnnotation, []string{"GPU-l"}, 16384, false},
		// HAMi's device plugin registers physical memory × deviceMemoryScaling and books against that: gpuadmit books the same.
		{"HAMi's registration preferred over the agent's (overcommit honoured)",
			map[string]string{devices.NodeDevicesAnnotation: agent, devices.HAMiNodeRegisterAnnotation: hami},
			devices.HAMiNodeRegisterAnnotation, []string{"GPU-hami", "GPU-hami2"}, 81920, false},
		{"malformed: reported, no known devices", map[string]string{devices.NodeDevicesAnnotation: `[{"uuid":"GPU-x"`},
			devices.NodeDevicesAnnotation, nil, 0, true},
		{"malformed HAMi: reported", map[string]string{devices.HAMiNodeRegisterAnnotation: "garbage"},
			devices.HAMiNodeRegisterAnnotation, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(t)
			l.UpsertNode(testnode.Annotated("n1", map[string]string{"gpu": "yes"}, tt.annotations))
			l.UpsertNode(testnode.Annotated("cpu-only", nil, nil))
			c := l.Capacity()
			if len(c.Nodes) != 1 {
				t.Fatalf("capacity nodes = %v, want only n1 (CPU-only nodes are left out)", c.Nodes)
			}
			n := c.Nodes["n1"]
			var ids []string
			for _, d := range n.Devices {
				ids = append(ids, d.UUID)
			}
			if n.Source != tt.wantSource || !slices.Equal(ids, tt.wantDevices) || n.MaxDeviceMemMiB != tt.wantMax ||
				(len(n.Problems) > 0) != tt.wantProblem || n.Labels["gpu"] != "yes" {
				t.Errorf("got %+v", n)
			}
			if tt.wantProblem {
				if p := l.Snapshot(nil).Problems; len(p) != 1 || p[0].Kind != ProblemNode || p[0].Key != tt.wantSource {
					t.Errorf("snapshot problems = %v", p)
				}
			}
		})
	}
}

func TestCapacityIsCachedAndRebuilt(t *testing.T) {
	l := newLedger(t)
	l.UpsertNode(testnode.WithDevices("n1", map[string]string{"zone": "a"}, dev("GPU-1", 24576)))
	c1 := l.Capacity()
	l.UpsertNode(testnode.WithDevices("n1", map[string]string{"zone": "a"}, dev("GPU-1", 24576))) // unchanged: resync
	if c2 := l.Capacity(); c2 != c1 {
		t.Errorf("an unchanged node must not rebuild the capacity")
	}
	l.UpsertNode(testnode.WithDevices("n1", map[string]string{"zone": "b"}, dev("GPU-1", 24576)))
	c3 := l.Capacity()
	if c3 == c1 || c3.Nodes["n1"].Labels["zone"] != "b" || c1.Nodes["n1"].Labels["zone"] != "a" {
		t.Errorf("a label change must rebuild the capacity and leave older snapshots alone")
	}
	inZoneA := testpod.New("p").App("a", gpu(1)).Build()
	inZoneA.Spec.NodeSelector = map[string]string{"zone": "a"}
	if got := c3.MaxDeviceMemMiBFor(inZoneA); got != 0 {
		t.Errorf("no node in zone a: max %d, want 0", got)
	}
	if got := c3.MaxDeviceMemMiBFor(testpod.New("p").App("a", gpu(1)).Build()); got != 24576 {
		t.Errorf("max over all nodes %d, want 24576", got)
	}
	l.DeleteNode("n1")
	if c := l.Capacity(); len(c.Nodes) != 0 {
		t.Errorf("after delete: %v", c.Nodes)
	}
}

// TestPercentagesFollowTheNodes: memory given as a percentage (or the
// whole device) resolves as its admission resolved it: against the largest
// device of the nodes it may run on. It is unresolved while no such device
// is known. A pending pod then keeps that size (once the node list is in):
// a larger node appearing does not raise it, whatever it announces. A
// bound pod follows its own node only: another node's larger devices do
// not raise it. Neither drops below the size it was first resolved
// against: shrinking or deleted nodes leave it, and say so.
func TestPercentagesFollowTheNodes(t *testing.T) {
	l := newLedger(t)
	l.NodesListed()
	pending := testpod.New("pending").NS("ns").App("a", gpu(1), pct(50)).Build()
	bound := testpod.New("bound").NS("ns").App("a", gpu(1), pct(50)).Node("n1").Build()
	l.UpsertPod(pending)
	l.UpsertPod(bound)
	s := l.Namespace("ns", nil)
	if !same(s.Used, nv(2, 0, 0)) || len(s.Unresolved) != 2 || s.Unresolved[0].Pod != "bound" || s.Unresolved[0].Containers[0] != "a" {
		t.Fatalf("before any node is known: used %v unresolved %v; want 2 GPUs, memory unresolved for both", s.Used, s.Unresolved)
	}
	l.UpsertNode(testnode.WithDevices("n1", nil, dev("GPU-1", 24576), dev("GPU-2", 81920)))
	if s = l.Namespace("ns", nil); !same(s.Used, nv(2, 2*40960, 0)) || len(s.Unresolved) != 0 {
		t.Fatalf("node known: used %v unresolved %v; want 50%% of 81920 for both", s.Used, s.Unresolved)
	}
	l.UpsertNode(testnode.WithDevices("n2", map[string]string{"gpu": "h200"}, dev("GPU-3", 143771)))
	if s = l.Namespace("ns", nil); nvOnly(t, s.Used).MemMiB != 2*40960 {
		t.Fatalf("a larger node appeared: used %d MiB, want 2 × 40960 (no other node's word raises a charge)", nvOnly(t, s.Used).MemMiB)
	}
	l.UpsertNode(testnode.WithDevices("n1", nil, dev("GPU-1", 24576)))
	if s = l.Namespace("ns", nil); nvOnly(t, s.Used).MemMiB != 2*40960 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Message, "its node n1 now announces at most 24576 MiB") {
		t.Fatalf("n1 shrank: used %d MiB, problems %v; want 2 × 40960, the bound pod's held charge reported", nvOnly(t, s.Used).MemMiB, s.Problems)
	}
	l.DeleteNode("n1")
	l.DeleteNode("n2")
	if s = l.Namespace("ns", nil); nvOnly(t, s.Used).MemMiB != 2*40960 || len(s.Unresolved) != 0 || len(s.Problems) != 2 || s.Problems[0].Kind != ProblemCharge {
		t.Fatalf("nodes gone: used %v unresolved %v problems %v; want both still charged the 40960 MiB first resolved, and reported", s.Used, s.Unresolved, s.Problems)
	}
	l.DeletePod(bound)
	l.DeletePod(pending)
	if st := l.Snapshot(nil).Stats; st.Pods != 0 || st.Nodes != 0 || st.Namespaces != 0 {
		t.Errorf("everything deleted, stats %+v", st)
	}
}

// TestPendingWholeCardPodsAreCharged is the hole of a whole-card or
// percentage pod charged 0 while Pending: HAMi books the whole card
// (pkg/device/nvidia Fit: memreq = Totalmem * 100 / 100), and so must the
// ledger from the moment the pod exists, with the same eligibility the
// admission used, and keep it once bound and assigned.
func TestPendingWholeCardPodsAreCharged(t *testing.T) {
	l := newLedger(t)
	l.UpsertNode(testnode.WithDevices("a10", map[string]string{"gpu": "a10"}, dev("GPU-a", 24576)))
	l.UpsertNode(testnode.WithDevices("h100", map[string]string{"gpu": "h100"}, dev("GPU-h0", 81920), dev("GPU-h1", 81920)))
	for _, tt := range []struct {
		name string
		pod  *testpod.Builder
		want effective.Vector
	}{
		{"whole card, any node: the largest device", testpod.New("p").NS("ns").App("a", gpu(1)), vec(1, 81920, 100)},
		{"gpumem 0: the whole card", testpod.New("p").NS("ns").App("a", gpu(1), mem(0)), vec(1, 81920, 0)},
		{"percentage 0: the whole card", testpod.New("p").NS("ns").App("a", gpu(1), pct(0)), vec(1, 81920, 0)},
		{"50 %, selector to a10", testpod.New("p").NS("ns").App("a", gpu(1), pct(50)).NodeSelector("gpu", "a10"), vec(1, 12288, 0)},
		{"50 %, first seen bound to a10: its own node's device (HAMi books 12288), never another node's", testpod.New("p").NS("ns").App("a", gpu(1), pct(50)).Node("a10"), vec(1, 12288, 0)},
		{"50 %, selector to a10, bound there", testpod.New("p").NS("ns").App("a", gpu(1), pct(50)).NodeSelector("gpu", "a10").Node("a10"), vec(1, 12288, 0)},
		{"whole card, assigned to one h100 device", testpod.New("p").NS("ns").App("a", gpu(1)).Node("h100").
			Devices("GPU-h1,NVIDIA,81920,100:;"), vec(1, 81920, 100)},
		{"two cards at 50 %, assigned", testpod.New("p").NS("ns").App("a", gpu(2), pct(50)).Node("h100").
			Devices("GPU-h0,NVIDIA,40960,0:GPU-h1,NVIDIA,40960,0:;"), vec(2, 81920, 0)},
		{"no eligible node: unresolved", testpod.New("p").NS("ns").App("a", gpu(1)).NodeSelector("gpu", "b200"), vec(1, 0, 100)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pod.Build()
			l.UpsertPod(p)
			defer l.DeletePod(p)
			if got := l.Namespace("ns", nil).Used; !same(got, effective.UsageOf(nvidia, tt.want)) {
				t.Errorf("used %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeviceUsageOfUnannouncedDevices(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(testpod.New("p").NS("ns").App("a", gpu(1), mem(1000)).Node("n9").Devices("GPU-z,NVIDIA,1000,10:;").
		AppRunning("a").Build())
	d := l.Snapshot(nil).Nodes["n9"].Devices["GPU-z"]
	if d.Capacity != nil || d.Used != vec(1, 1000, 10) {
		t.Errorf("got %+v, want usage without capacity", d)
	}
	l.UpsertNode(testnode.WithDevices("n9", nil, dev("GPU-z", 24576)))
	if d := l.Snapshot(nil).Nodes["n9"].Devices["GPU-z"]; d.Capacity == nil || d.Capacity.MemMiB != 24576 || d.Used.MemMiB != 1000 {
		t.Errorf("got %+v, want capacity 24576 and usage 1000", d)
	}
}
