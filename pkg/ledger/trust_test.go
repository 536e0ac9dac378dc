package ledger

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// TestChargeNeverDrops: inputs anyone with edit in the namespace (pod
// annotations) or on the node (its annotations) may rewrite never lower
// what a pod is charged; only its lifecycle does. A whole-card pod bound to
// a node with an H200 (143771 MiB) and a MIG 1g.18gb slice (16384 MiB) is
// charged 143771 MiB, as its admission resolved; after each attack it still
// is, its device usage stays on the first assignment, and the change is
// reported (a problem of kind charge, shown as the GPUUsage condition).
// Found by an attack: annotating the pod with the MIG slice took the
// namespace's charge from 143771 to 16384 MiB and let a 120000 MiB pod in.
// HAMi: its scheduler writes hami.io/vgpu-devices-allocated before binding
// and never after (pkg/scheduler: Bind patches the annotations, then binds).
//
// A replica restarted after the attack (the final objects replayed into a
// fresh ledger) charges the same after every edit of the pod: a bound pod
// is sized by its node's largest device, not by its assignment. After an
// edit of the node's own annotation it follows what the node now says of
// itself (replay: the node's word is trusted for its own devices; no
// object holds what it said before), or, when the node announces no
// device, what the pod's admission resolves; the running replica keeps
// the larger charge and reports the drop.
func TestChargeNeverDrops(t *testing.T) {
	const h200, mig = 143771, 16384
	node := func(devs ...devices.Device) *corev1.Node { return testnode.WithDevices("n1", nil, devs...) }
	full := node(dev("GPU-h200", h200), dev("MIG-1g", mig))
	whole := func() *testpod.Builder {
		return testpod.New("whole").NS("team-a").UID("u-whole").App("c", gpu(1)).Node("n1").
			Devices("GPU-h200,NVIDIA,143771,100:;").AppRunning("c")
	}
	for _, tt := range []struct {
		name string
		// attack returns the pod object it leaves (nil: the pod unchanged).
		attack func(l *Ledger) *corev1.Pod
		report string
		// replay is what a fresh ledger fed the final objects charges (MiB);
		// 0: the same as the running one; -1: unresolved.
		replay int64
	}{
		{"the assignment rewritten to the MIG slice", func(l *Ledger) *corev1.Pod {
			return upsert(l, whole().Devices("MIG-1g,NVIDIA,16384,100:;").Build())
		}, "was changed after the pod was bound", 0},
		{"the assignment removed", func(l *Ledger) *corev1.Pod {
			p := whole().Build()
			delete(p.Annotations, devices.PodAllocatedAnnotation)
			return upsert(l, p)
		}, "was changed after the pod was bound", 0},
		{"the assignment garbled", func(l *Ledger) *corev1.Pod { return upsert(l, whole().Devices("garbage;").Build()) },
			"was changed after the pod was bound", 0},
		{"the node's H200 announced as 16384 MiB", func(l *Ledger) *corev1.Pod {
			l.UpsertNode(node(dev("GPU-h200", mig), dev("MIG-1g", mig)))
			return nil
		}, "charged for devices of 143771 MiB", mig},
		{"the node's annotation with memoryMiB 0 (refused: the node has no known devices)", func(l *Ledger) *corev1.Pod {
			l.UpsertNode(testnode.Annotated("n1", nil, map[string]string{devices.NodeDevicesAnnotation: `[{"uuid":"GPU-h200","memoryMiB":0}]`}))
			return nil
		}, "charged for devices of 143771 MiB", -1},
		{"the node's annotation removed", func(l *Ledger) *corev1.Pod { l.UpsertNode(testnode.Annotated("n1", nil, nil)); return nil },
			"charged for devices of 143771 MiB", -1},
		{"the node deleted", func(l *Ledger) *corev1.Pod { l.DeleteNode("n1"); return nil }, "charged for devices of 143771 MiB", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(t)
			l.UpsertNode(full)
			l.UpsertPod(whole().Build())
			if got := l.Namespace("team-a", nil).Used; !same(got, nv(1, h200, 100)) {
				t.Fatalf("before: charged %v, want the whole H200", got)
			}
			final := tt.attack(l)
			if final == nil {
				final = whole().Build()
			}
			s := l.Namespace("team-a", nil)
			if !same(s.Used, nv(1, h200, 100)) {
				t.Errorf("after: charged %v, want still %v", s.Used, nv(1, h200, 100))
			}
			if len(s.Problems) != 1 || s.Problems[0].Kind != ProblemCharge || !strings.Contains(s.Problems[0].Message, tt.report) {
				t.Errorf("problems %v, want one of kind charge saying %q", s.Problems, tt.report)
			}
			for id, d := range l.Snapshot(nil).Nodes["n1"].Devices {
				if id != "GPU-h200" && !d.Used.IsZero() {
					t.Errorf("device %s charged %v: the first assignment counts", id, d.Used)
				}
			}
			assertReplay(t, l, final, tt.replay)
			// The lifecycle still ends the charge.
			l.UpsertPod(whole().Phase(corev1.PodSucceeded).Build())
			if got := l.Namespace("team-a", nil).Used; !got.IsZero() {
				t.Errorf("after the pod succeeded: charged %v, want nothing", got)
			}
		})
	}
}

// TestLegitimateReassignment: what may change a pod's devices. Before
// binding, HAMi re-schedules a pod whose binding failed and writes another
// assignment: the one present when the pod is bound counts. A pod deleted
// and created again is a new pod (a new UID): charged afresh, from its own
// admission, with its own assignment. Restoring an edited annotation clears
// the report.
func TestLegitimateReassignment(t *testing.T) {
	l := newLedger(t)
	l.UpsertNode(testnode.WithDevices("n1", nil, dev("GPU-a", 24576), dev("GPU-b", 24576)))
	base := func(uid string) *testpod.Builder {
		return testpod.New("p").NS("ns").UID(uid).App("c", gpu(1), mem(8192))
	}
	l.UpsertPod(base("u1").Devices("GPU-a,NVIDIA,8192,0:;").Build()) // pending: HAMi's first try
	l.UpsertPod(base("u1").Devices("GPU-b,NVIDIA,8192,0:;").Build()) // re-scheduled
	l.UpsertPod(base("u1").Devices("GPU-b,NVIDIA,8192,0:;").Node("n1").Build())
	if used := deviceUsed(l, "n1", "GPU-b"); used != vec(1, 8192, 0) || len(l.Namespace("ns", nil).Problems) != 0 {
		t.Fatalf("bound after a re-schedule: GPU-b %v, problems %v; want the assignment at binding, unreported", used, l.Namespace("ns", nil).Problems)
	}
	l.UpsertPod(base("u1").Devices("GPU-a,NVIDIA,8192,0:;").Node("n1").Build()) // an edit after binding
	if used := deviceUsed(l, "n1", "GPU-b"); used != vec(1, 8192, 0) || len(l.Namespace("ns", nil).Problems) != 1 {
		t.Fatalf("edited: GPU-b %v, problems %v", used, l.Namespace("ns", nil).Problems)
	}
	l.UpsertPod(base("u1").Devices("GPU-b,NVIDIA,8192,0:;").Node("n1").Build()) // restored
	if p := l.Namespace("ns", nil).Problems; len(p) != 0 {
		t.Fatalf("restored: problems %v, want none", p)
	}
	l.DeletePod(base("u1").Build())
	l.UpsertPod(base("u2").Devices("GPU-a,NVIDIA,8192,0:;").Node("n1").Build()) // created again
	if a, b := deviceUsed(l, "n1", "GPU-a"), deviceUsed(l, "n1", "GPU-b"); a != vec(1, 8192, 0) || !b.IsZero() {
		t.Fatalf("re-created: GPU-a %v, GPU-b %v; want the new pod's own assignment", a, b)
	}
}

// upsert records p in l and returns it.
func upsert(l *Ledger, p *corev1.Pod) *corev1.Pod {
	l.UpsertPod(p)
	return p
}

// assertReplay feeds a fresh ledger the final objects the attack left (the
// pod, the node n1 as l now reads it) and checks what it charges team-a:
// want MiB; 0: what l charges; -1: the pod is unresolved (its node
// announces no device and no other node sizes its admission: its memory
// is listed unresolved, never charged as free).
func assertReplay(t *testing.T, l *Ledger, pod *corev1.Pod, want int64) {
	t.Helper()
	fresh := newLedger(t)
	if n, ok := l.Capacity().Nodes["n1"]; ok {
		fresh.UpsertNode(testnode.WithDevices("n1", nil, capacityDevices(n)...))
	}
	fresh.NodesListed()
	fresh.UpsertPod(pod)
	got, running := fresh.Namespace("team-a", nil), l.Namespace("team-a", nil)
	switch {
	case want == 0 && !same(got.Used, running.Used):
		t.Errorf("replayed into a fresh ledger: charged %v, the running one %v", got.Used, running.Used)
	case want > 0 && nvOnly(t, got.Used).MemMiB != want:
		t.Errorf("replayed into a fresh ledger: charged %v, want %d MiB (what the node now says of itself)", got.Used, want)
	case want < 0 && len(got.Unresolved) != 1:
		t.Errorf("replayed into a fresh ledger: charged %v, unresolved %v; want the pod unresolved", got.Used, got.Unresolved)
	}
}

// capacityDevices are the devices of a node's capacity, as announced.
func capacityDevices(n *NodeCapacity) []devices.Device {
	out := make([]devices.Device, 0, len(n.Devices))
	for _, d := range n.Devices {
		out = append(out, dev(d.UUID, d.MemMiB))
	}
	return out
}
