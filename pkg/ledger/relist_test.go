package ledger

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// relistPod is the i-th pod of list gen (0, 1, ...): pods without managed
// resources (as PodTransform hands them over), GPU pods bound and pending,
// pods whose memory is a percentage of their device (derived again under
// the lock), invalid pods and pods with an unreadable assignment; in a
// later list every eleventh pod was deleted and recreated under its name
// (a new UID), and every thirteenth is gone.
func relistPod(i, gen int) metav1.Object {
	if gen > 0 && i%13 == 0 {
		return nil
	}
	uid := fmt.Sprint("uid-", i)
	if gen > 0 && i%11 == 0 {
		uid = fmt.Sprint("uid-", i, "-", gen)
	}
	b := testpod.New(fmt.Sprint("pod-", i)).NS(fmt.Sprint("team-", i%7)).UID(uid).RV(fmt.Sprint(gen*1_000_000 + i + 1))
	node := fmt.Sprint("node-", i%5)
	switch (i + gen) % 7 {
	case 0, 1:
		m := b.Build().ObjectMeta
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}}
	case 2:
		return b.App("a", gpu(1), mem(1024)).Node(node).Devices("GPU-a,NVIDIA,1024,0:;").AppRunning("a").Build()
	case 3:
		return b.App("a", gpu(1), mem(2048)).Build()
	case 4:
		return b.App("a", gpu(1), pct(50)).Node(node).Devices("GPU-b,NVIDIA,12288,0:;").Build()
	case 5:
		return b.App("a", gpu(1), testpod.Res(testpod.MemName, "1500m")).Build()
	default:
		return b.App("a", gpu(1), mem(100)).Node(node).Devices("GPU-a,NVIDIA,x,0:;").Build()
	}
}

// relistList is list gen of n pods.
func relistList(n, gen int) []metav1.Object {
	var out []metav1.Object
	for i := range n {
		if p := relistPod(i, gen); p != nil {
			out = append(out, p)
		}
	}
	return out
}

// upsertEach is what ReplacePods must equal: what the ledger holds of a
// pod the list lacks removed, then UpsertPod of every listed pod in order.
func upsertEach(l *Ledger, pods []metav1.Object) {
	listed := map[types.UID]bool{}
	for _, p := range pods {
		listed[metaUID(p)] = true
	}
	l.mu.Lock()
	for uid := range l.known {
		if !listed[uid] {
			delete(l.known, uid)
		}
	}
	for uid := range l.seen {
		if !listed[uid] {
			l.removeLocked(uid)
			delete(l.seen, uid)
		}
	}
	for _, m := range []map[types.UID]bool{keysOf(l.pods), keysOf(l.invalid)} {
		for uid := range m {
			if !listed[uid] {
				l.removeLocked(uid)
			}
		}
	}
	l.mu.Unlock()
	for _, o := range pods {
		switch p := o.(type) {
		case *corev1.Pod:
			l.UpsertPod(p)
		case *metav1.PartialObjectMetadata:
			l.UpsertPod(&corev1.Pod{ObjectMeta: p.ObjectMeta})
		}
	}
}

func keysOf[V any](m map[types.UID]V) map[types.UID]bool {
	out := make(map[types.UID]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// relistLedger is a ledger of 5 nodes with two 24 GiB devices each.
func relistLedger() *Ledger {
	l := New(Options{Families: []effective.Family{effective.Nvidia()}, Log: logr.Discard()})
	for i := range 5 {
		l.UpsertNode(testnode.WithDevices(fmt.Sprint("node-", i), nil, dev("GPU-a", 24576), dev("GPU-b", 24576)))
	}
	return l
}

// TestReplacePodsIsUpsertEach: a list applied whole (its Pods prepared on
// every core, committed in batches) leaves the ledger as removing the
// unlisted pods and upserting each listed pod in order does: the first
// list into an empty ledger, and a relist over it (pods gone, pods
// recreated under their names, pods changed), small lists and lists large
// enough to be prepared concurrently and committed in several batches.
func TestReplacePodsIsUpsertEach(t *testing.T) {
	for _, n := range []int{0, 40, 3 * commitBatch} {
		t.Run(fmt.Sprint(n, " pods"), func(t *testing.T) {
			got, want := relistLedger(), relistLedger()
			for gen := range 3 {
				list := relistList(n, gen)
				got.ReplacePods(list)
				upsertEach(want, list)
				g, w := got.Snapshot(nil), want.Snapshot(nil)
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("list %d of %d pods: ReplacePods gives stats %+v, %d problems; UpsertPod of each %+v, %d problems",
						gen, n, g.Stats, len(g.Problems), w.Stats, len(w.Problems))
				}
				if !reflect.DeepEqual(got.known, want.known) || !reflect.DeepEqual(got.seen, want.seen) || !reflect.DeepEqual(got.byName, want.byName) {
					t.Fatalf("list %d of %d pods: %d known, %d seen, %d names; want %d, %d, %d",
						gen, n, len(got.known), len(got.seen), len(got.byName), len(want.known), len(want.seen), len(want.byName))
				}
				if n > 0 && g.Stats.Pods == 0 {
					t.Fatalf("list %d: no pod recorded", gen)
				}
			}
		})
	}
}
