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
func TestChargeNeverDrops(t *testing.T) {
	const h200, mig = 143771, 16384
	node := func(devs ...devices.Device) *corev1.Node { return testnode.WithDevices("n1", nil, devs...) }
	full := node(dev("GPU-h200", h200), dev("MIG-1g", mig))
	whole := func() *testpod.Builder {
		return testpod.New("whole").NS("team-a").UID("u-whole").App("c", gpu(1)).Node("n1").
			Devices("GPU-h200,NVIDIA,143771,100:;").AppRunning("c")
	}
	for _, tt := range []struct {
		name   string
		attack func(l *Ledger)
		report string
	}{
		{"the assignment rewritten to the MIG slice", func(l *Ledger) {
			l.UpsertPod(whole().Devices("MIG-1g,NVIDIA,16384,100:;").Build())
		}, "was changed after the pod was bound"},
		{"the assignment removed", func(l *Ledger) {
			p := whole().Build()
			delete(p.Annotations, devices.PodAllocatedAnnotation)
			l.UpsertPod(p)
		}, "was changed after the pod was bound"},
		{"the assignment garbled", func(l *Ledger) { l.UpsertPod(whole().Devices("garbage;").Build()) }, "was changed after the pod was bound"},
		{"the node's H200 announced as 16384 MiB", func(l *Ledger) {
			l.UpsertNode(node(dev("GPU-h200", mig), dev("MIG-1g", mig)))
		}, "charged for devices of 143771 MiB"},
		{"the node's annotation with memoryMiB 0 (refused: the node has no known devices)", func(l *Ledger) {
			l.UpsertNode(testnode.Annotated("n1", nil, map[string]string{devices.NodeDevicesAnnotation: `[{"uuid":"GPU-h200","memoryMiB":0}]`}))
		}, "charged for devices of 143771 MiB"},
		{"the node's annotation removed", func(l *Ledger) { l.UpsertNode(testnode.Annotated("n1", nil, nil)) }, "charged for devices of 143771 MiB"},
		{"the node deleted", func(l *Ledger) { l.DeleteNode("n1") }, "charged for devices of 143771 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(t)
			l.UpsertNode(full)
			l.UpsertPod(whole().Build())
			if got := l.Namespace("team-a", nil).Used; !same(got, nv(1, h200, 100)) {
				t.Fatalf("before: charged %v, want the whole H200", got)
			}
			tt.attack(l)
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
