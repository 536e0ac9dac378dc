package ledger

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// inflateWorld is a cluster of n1 (two 80 GiB GPUs), d1 (one 64 GiB
// Hygon DCU) and the pods whose charges depend on device sizes: a
// whole-card pod bound to n1 on its assigned GPU-a, a 50 % pod bound to n1
// with no assignment, pending whole-card and 50 % pods that name no node,
// and whole-DCU pods pending and bound to d1; each in its own namespace.
type inflateWorld struct {
	l     *Ledger
	hygon effective.Family
	nodes []*corev1.Node
	pods  []*corev1.Pod
}

const inflateH100, inflateDCU = 81920, 65536

func newInflateWorld(t *testing.T) *inflateWorld {
	t.Helper()
	w := &inflateWorld{hygon: hamiFamily(t, "hygon")}
	w.l = New(Options{Families: []effective.Family{effective.Nvidia(), w.hygon}})
	w.nodes = []*corev1.Node{
		testnode.WithDevices("n1", map[string]string{"pool": "n1"}, dev("GPU-a", inflateH100), dev("GPU-b", inflateH100)),
		testnode.Annotated("d1", map[string]string{"pool": "d1"}, map[string]string{w.hygon.RegisterAnno: "DCU-0,4,65536,100,DCU,0,true:"}),
	}
	dcu := testpod.Res(w.hygon.Names.Count, "1")
	w.pods = []*corev1.Pod{
		testpod.New("p").NS("bound-whole").App("c", gpu(1)).Node("n1").Devices("GPU-a,NVIDIA,81920,100:;").AppRunning("c").Build(),
		testpod.New("p").NS("bound-pct").App("c", gpu(1), pct(50)).Node("n1").AppRunning("c").Build(),
		testpod.New("p").NS("pending-whole").App("c", gpu(1)).Build(),
		testpod.New("p").NS("pending-pct").App("c", gpu(1), pct(50)).Build(),
		testpod.New("p").NS("pending-dcu").App("c", dcu).Build(),
		testpod.New("p").NS("bound-dcu").App("c", dcu).Node("d1").AppRunning("c").Build(),
	}
	w.feed(w.l)
	return w
}

// feed gives l the world's nodes, then its pods, as a Feed does at start.
func (w *inflateWorld) feed(l *Ledger) {
	for _, n := range w.nodes {
		l.UpsertNode(n)
	}
	l.NodesListed()
	for _, p := range w.pods {
		l.UpsertPod(p)
	}
}

// charges is what each namespace of the world is charged.
func (w *inflateWorld) charges(l *Ledger) map[string]effective.Usage {
	out := map[string]effective.Usage{}
	for _, p := range w.pods {
		out[p.Namespace] = l.Namespace(p.Namespace, nil).Used
	}
	return out
}

func hamiFamily(t *testing.T, name string) effective.Family {
	t.Helper()
	for _, f := range effective.HAMiFamilies() {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("HAMiFamilies has no %s family", name)
	return effective.Family{}
}

// hamiRegister is hami.io/node-nvidia-register announcing one GPU of mem
// MiB, written as HAMi's JSON (EncodeHAMiNodeRegister refuses what HAMi's
// int32 cannot hold; this does not).
func hamiRegister(t *testing.T, mem int64) map[string]string {
	t.Helper()
	b, err := json.Marshal([]map[string]any{{"id": "GPU-huge", "index": 0, "count": 10, "devmem": mem, "devcore": 100,
		"type": "NVIDIA H100", "numa": 0, "mode": "hami-core", "health": true}})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{devices.HAMiNodeRegisterAnnotation: string(b)}
}

// TestInflatedNodeRaisesNoCharge is issue 42's fifth hole: node n2 (or
// whoever may write its annotations) announces a device of 2^50 MiB, and
// every pod whose charge depends on device sizes was re-charged against
// it: the pod bound to n1 on its 80 GiB GPU to 1.1e15 MiB, every pending
// whole-card and percentage pod over its limit. Now, for every way a node
// announces devices (the node agent's annotation, HAMi's nvidia register,
// another family's register):
//   - no charge changes: a bound pod follows only its own node, a pending
//     pod keeps what was first resolved, whatever n2 says, plausible or not;
//   - a device above its family's bound is a node problem naming n2;
//   - a new pod's admission resolves against the plausible devices only,
//     and a pod that may only run on n2 is unresolved (denied);
//   - a ledger rebuilt from the objects (a restarted replica) charges the
//     same (the implausible device is invisible to every charge; a
//     plausible one sizes only the admission of pods still pending).
func TestInflatedNodeRaisesNoCharge(t *testing.T) {
	const huge = int64(1) << 50
	hygon := hamiFamily(t, "hygon")
	hygonRegister := func(mem string) map[string]string {
		return map[string]string{hygon.RegisterAnno: "DCU-huge,4," + mem + ",100,DCU,0,true:"}
	}
	pool := map[string]string{"pool": "n2"}
	for _, tt := range []struct {
		name string
		n2   *corev1.Node
		// problem is the node problem reported ("": none, a plausible size).
		problem string
		// admit is what a new pod of each family that names no node
		// resolves against; pinned, one that may only run on n2.
		admit, pinned map[string]int64
	}{
		{"agent annotation, 2^50 MiB", testnode.WithDevices("n2", pool, dev("GPU-huge", huge)),
			"node announces an implausible GPU device", map[string]int64{nvidia: inflateH100, "hygon": inflateDCU}, map[string]int64{nvidia: 0}},
		{"agent annotation, a 24 GiB GPU and one of 2^50 MiB", testnode.WithDevices("n2", pool, dev("GPU-ok", 24576), dev("GPU-huge", huge)),
			`"GPU-huge" (1125899906842624 MiB)`, map[string]int64{nvidia: inflateH100, "hygon": inflateDCU}, map[string]int64{nvidia: 24576}},
		{"HAMi nvidia register, 2^31-1 MiB (the most HAMi's int32 holds)", testnode.Annotated("n2", pool, hamiRegister(t, math.MaxInt32)),
			"node announces an implausible GPU device", map[string]int64{nvidia: inflateH100, "hygon": inflateDCU}, map[string]int64{nvidia: 0}},
		{"HAMi nvidia register, 2^50 MiB (beyond int32: garbled)", testnode.Annotated("n2", pool, hamiRegister(t, huge)),
			"node has no known GPU devices", map[string]int64{nvidia: inflateH100, "hygon": inflateDCU}, map[string]int64{nvidia: 0}},
		{"hygon register, 2^31-1 MiB", testnode.Annotated("n2", pool, hygonRegister("2147483647")),
			"node announces an implausible hygon device", map[string]int64{nvidia: inflateH100, "hygon": inflateDCU}, map[string]int64{"hygon": 0}},
		{"agent annotation, 1 TiB: plausible, still another node's word", testnode.WithDevices("n2", pool, dev("GPU-big", 1<<20)),
			"", map[string]int64{nvidia: 1 << 20, "hygon": inflateDCU}, map[string]int64{nvidia: 1 << 20}},
		{"hygon register, 1 TiB: plausible, still another node's word", testnode.Annotated("n2", pool, hygonRegister("1048576")),
			"", map[string]int64{nvidia: inflateH100, "hygon": 1 << 20}, map[string]int64{"hygon": 1 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newInflateWorld(t)
			before := w.charges(w.l)
			wantBefore := map[string]effective.Usage{
				"bound-whole": nv(1, inflateH100, 100), "bound-pct": nv(1, inflateH100/2, 0),
				"pending-whole": nv(1, inflateH100, 100), "pending-pct": nv(1, inflateH100/2, 0),
				"pending-dcu": effective.UsageOf("hygon", vec(1, inflateDCU, 100)), "bound-dcu": effective.UsageOf("hygon", vec(1, inflateDCU, 100)),
			}
			for ns, want := range wantBefore {
				if !same(before[ns], want) {
					t.Fatalf("before the attack: %s charged %v, want %v", ns, before[ns], want)
				}
			}
			w.l.UpsertNode(tt.n2)
			w.nodes = append(w.nodes, tt.n2)
			for ns, got := range w.charges(w.l) {
				if !same(got, before[ns]) {
					t.Errorf("%s charged %v after n2's announcement, want still %v (no other node's word raises a charge)", ns, got, before[ns])
				}
			}
			assertNodeProblem(t, w.l, tt.problem)
			assertAdmission(t, w.l, tt.admit, tt.pinned)
			// A replica started now (the final objects replayed into a fresh
			// ledger) charges every bound pod the same: each follows its own
			// node only. A pending pod too, unless n2's device is plausible:
			// then it sizes the pending pods' admission as it sizes a new
			// pod's (more, never less).
			fresh := New(Options{Families: w.l.Families()})
			w.feed(fresh)
			for ns, got := range w.charges(fresh) {
				pendingRaised := tt.problem == "" && strings.HasPrefix(ns, "pending-") && got.Max(before[ns]).Equal(got)
				if !same(got, before[ns]) && !pendingRaised {
					t.Errorf("rebuilt from the objects: %s charged %v, want %v", ns, got, before[ns])
				}
			}
		})
	}
}

// assertNodeProblem checks that the ledger reports n2's announcement as a
// node problem saying want ("": that it reports nothing).
func assertNodeProblem(t *testing.T, l *Ledger, want string) {
	t.Helper()
	var found []Problem
	for _, p := range l.Snapshot(nil).Problems {
		if p.Kind == ProblemNode && p.Name == "n2" {
			found = append(found, p)
		}
	}
	switch {
	case want == "" && len(found) > 0:
		t.Errorf("a plausible announcement reported: %v", found)
	case want != "" && (len(found) != 1 || !strings.Contains(found[0].Message, want)):
		t.Errorf("node problems of n2 %v, want one saying %q", found, want)
	}
}

// assertAdmission checks what a new pod's sizes resolve against (the
// decision and the mutating webhook resolve with ResolveSizesFor): one
// that names no node (admit), one whose selector admits only n2 (pinned;
// 0: unresolved, so denied).
func assertAdmission(t *testing.T, l *Ledger, admit, pinned map[string]int64) {
	t.Helper()
	c := l.Capacity()
	anywhere := testpod.New("new").NS("new").App("c", gpu(1)).Build()
	onN2 := testpod.New("new").NS("new").App("c", gpu(1)).NodeSelector("pool", "n2").Build()
	got := c.ResolveSizesFor(anywhere, l.Families())
	for f, want := range admit {
		if got[f] != want {
			t.Errorf("a new pod's %s devices resolve against %d MiB, want %d", f, got[f], want)
		}
	}
	got = c.ResolveSizesFor(onN2, l.Families())
	for f, want := range pinned {
		if got[f] != want {
			t.Errorf("a new pod that may only run on n2: %s devices resolve against %d MiB, want %d", f, got[f], want)
		}
	}
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if d.MemMiB > devices.DefaultMaxDeviceMemoryMiB {
				t.Errorf("the capacity holds node %s's device %s of %d MiB, above the bound", n.Name, d.UUID, d.MemMiB)
			}
		}
	}
}
