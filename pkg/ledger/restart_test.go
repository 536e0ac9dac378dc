package ledger

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// TestRestartChargesAsRunning: a replica that first sees a pod already
// bound (a restart, a late start, a rolling upgrade) charges it what a
// replica that saw its admission charges. Found by an attack: a 50 % pod
// admitted at 40960 MiB (the cluster's largest device, 80 GiB) and bound
// to a node with one 16 GiB GPU was charged 40960 MiB by the running
// replica and 8192 MiB by a restarted one: the replicas disagreed, and the
// restarted one admitted 32 GiB more. Binding is a step of the pod's
// lifecycle: pending, a pod is charged what its admission resolved; bound,
// against its own node only (what HAMi books: a share of the device the
// pod got, at most its node's largest), so that both replicas compute the
// same from the objects. For each pod, each order in which a restarted
// replica receives the objects (nodes first, or pods before their nodes):
//   - pending, the pod is charged what its admission resolved;
//   - bound, the running and the restarted replica charge the same, and
//     no less than what HAMi books on the node it got;
//   - its node announcing a larger device later raises both alike;
//   - a pod bound to a node that announces no device stays charged what
//     its admission resolves (binding frees nothing the node cannot size).
func TestRestartChargesAsRunning(t *testing.T) {
	big := testnode.WithDevices("big", map[string]string{"pool": "big"}, dev("GPU-big", 81920))
	small := testnode.WithDevices("small", map[string]string{"pool": "small"}, dev("GPU-small", 16384))
	blank := testnode.Annotated("blank", map[string]string{"pool": "blank"}, nil)
	grown := testnode.WithDevices("small", map[string]string{"pool": "small"}, dev("GPU-small", 16384), dev("GPU-new", 24576))
	pct50 := func() *testpod.Builder { return testpod.New("p").NS("ns").UID("u1").App("a", gpu(1), pct(50)) }
	whole := func() *testpod.Builder { return testpod.New("p").NS("ns").UID("u1").App("a", gpu(1)) }
	for _, tt := range []struct {
		name string
		pod  func() *testpod.Builder
		node string
		// pending is the admission's charge (MiB), bound the charge once
		// bound (what HAMi books on the node), grown once the node also
		// announces a 24 GiB GPU.
		pending, bound, grown int64
	}{
		{"50 % to a 16 GiB node", pct50, "small", 40960, 8192, 12288},
		{"whole card to a 16 GiB node", whole, "small", 81920, 16384, 24576},
		{"50 % to a node that announces nothing", pct50, "blank", 40960, 40960, 40960},
		{"whole card to a node that announces nothing", whole, "blank", 81920, 81920, 81920},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nodes := []*corev1.Node{big, small, blank}
			running := newLedger(t)
			feedAll(running, nodes, nil)
			running.UpsertPod(tt.pod().Build())
			if got := nvOnly(t, running.Namespace("ns", nil).Used).MemMiB; got != tt.pending {
				t.Fatalf("pending: charged %d MiB, want what its admission resolved, %d", got, tt.pending)
			}
			boundPod := tt.pod().Node(tt.node).AppRunning("a").Build()
			running.UpsertPod(boundPod)
			check := func(stage string, want int64, objs []*corev1.Node) {
				t.Helper()
				held := nvOnly(t, running.Namespace("ns", nil).Used).MemMiB
				if held != want {
					t.Errorf("%s: the running replica charges %d MiB, want %d", stage, held, want)
				}
				for _, podsFirst := range []bool{false, true} {
					restarted := newLedger(t)
					feedAll(restarted, objs, []*corev1.Pod{boundPod}, podsFirst)
					if got := nvOnly(t, restarted.Namespace("ns", nil).Used).MemMiB; got != held {
						t.Errorf("%s (pods first: %v): a restarted replica charges %d MiB, the running one %d", stage, podsFirst, got, held)
					}
				}
			}
			check("bound", tt.bound, nodes)
			running.UpsertNode(grown)
			check("its node grew", tt.grown, []*corev1.Node{big, grown, blank})
		})
	}
}

// feedAll gives l the nodes and pods as a Feed does at start (nodes first,
// or, with podsFirst, the pods before the node list is in).
func feedAll(l *Ledger, nodes []*corev1.Node, pods []*corev1.Pod, podsFirst ...bool) {
	if len(podsFirst) > 0 && podsFirst[0] {
		for _, p := range pods {
			l.UpsertPod(p)
		}
		pods = nil
	}
	for _, n := range nodes {
		l.UpsertNode(n)
	}
	l.NodesListed()
	for _, p := range pods {
		l.UpsertPod(p)
	}
}
