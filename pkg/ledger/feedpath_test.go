package ledger

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
)

// The watches feed the accounting through pkg/feed: these tests drive the
// production paths (the pod feed's processing of the items its queue pops,
// the informers' handlers and transforms) into a ledger and read what it
// recorded.

// podDelta hands the ledger one item through the pod feed's production
// path (feed.PodProcess), as its queue pops it.
func podDelta(t *testing.T, l *Ledger, typ toolscache.DeltaType, obj any) {
	t.Helper()
	if err := feed.PodProcess(l, testr.New(t))(toolscache.Deltas{{Type: typ, Object: obj}}, false); err != nil {
		t.Fatal(err)
	}
}

// TestTombstones: a deletion whose last known object is a tombstone
// (DeletedFinalStateUnknown) removes what is stored.
func TestTombstones(t *testing.T) {
	pod := seedPod().InitRunning("convert-weights").Build()
	tests := []struct {
		name    string
		deleted func(l *Ledger)
		check   func(t *testing.T, l *Ledger)
	}{
		{"pod tombstone with the last known object", func(l *Ledger) {
			podDelta(t, l, toolscache.Deleted, toolscache.DeletedFinalStateUnknown{Key: "team-a/llm-server", Obj: pod})
		}, func(t *testing.T, l *Ledger) {
			if s := l.Namespace("team-a", nil); !s.Used.IsZero() || s.Pods != 0 {
				t.Errorf("used %v in %d pods after the tombstone", s.Used, s.Pods)
			}
		}},
		{"pod tombstone with a stale object: what is stored is subtracted", func(l *Ledger) {
			stale := seedPod().InitTerminated("convert-weights", 0).AppRunning("server").Build()
			podDelta(t, l, toolscache.Deleted, toolscache.DeletedFinalStateUnknown{Key: "team-a/llm-server", Obj: stale})
		}, func(t *testing.T, l *Ledger) {
			if s := l.Namespace("team-a", nil); !s.Used.IsZero() || deviceUsed(l, "node1", "GPU-0") != (effective.Vector{}) {
				t.Errorf("used %v after the tombstone", s.Used)
			}
		}},
		{"node tombstone", func(l *Ledger) {
			feed.NodeHandler(l, testr.New(t)).OnDelete(toolscache.DeletedFinalStateUnknown{Key: "node1", Obj: testnode.WithDevices("node1", nil)})
		}, func(t *testing.T, l *Ledger) {
			if c := l.Capacity(); len(c.Nodes) != 0 {
				t.Errorf("capacity after the tombstone: %v", c.Nodes)
			}
		}},
		{"quota tombstone", func(l *Ledger) {
			feed.QuotaHandler(l, testr.New(t)).OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-a/q2", Obj: &corev1.ResourceQuota{}})
		}, func(t *testing.T, l *Ledger) {
			if lim := l.Namespace("team-a", nil).Limits[nvidia].MemMiB; lim == nil || lim.Quota != "q1" || lim.Value != 40000 {
				t.Errorf("limit after deleting q2: %+v, want q1's 40000", lim)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(t)
			feed.NodeHandler(l, testr.New(t)).OnAdd(testnode.WithDevices("node1", nil, dev("GPU-0", 24576)), true)
			feed.QuotaHandler(l, testr.New(t)).OnAdd(testquota.New("team-a", "q1", map[string]string{"limits.nvidia.com/gpumem": "40000"}), true)
			feed.QuotaHandler(l, testr.New(t)).OnAdd(testquota.New("team-a", "q2", map[string]string{"limits.nvidia.com/gpumem": "24576"}), true)
			podDelta(t, l, toolscache.Added, pod)
			if s := l.Namespace("team-a", nil); nvOnly(t, s.Used).MemMiB != 20480 {
				t.Fatalf("setup: used %d", nvOnly(t, s.Used).MemMiB)
			}
			tt.deleted(l)
			tt.check(t, l)
		})
	}
}

// TestTransformKeepsWhatTheLedgerReads: the slim object yields exactly the
// same record as the full one, and drops what the ledger never reads.
func TestTransformKeepsWhatTheLedgerReads(t *testing.T) {
	s := effective.Nvidia()
	tr := podwire.PodTransform([]effective.Family{s})
	pods := []*corev1.Pod{
		seedPod().InitRunning("convert-weights").Build(),
		seedPod().InitTerminated("convert-weights", 0).AppRunning("server").Build(),
		seedPod().InitRestarted("convert-weights", 1).Build(),
		testpod.New("pct").NS("ns").Sidecar("s", gpu(1), pct(10)).App("a", testpod.Request(gpu(1), mem(100)), testpod.CPU("2")).
			Node("n1").Phase(corev1.PodSucceeded).Build(),
		testpod.New("cpu").NS("ns").App("a", testpod.CPU("2")).Node("n1").Build(),
	}
	for _, p := range pods {
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(strings.Repeat("f", 4096))}}
		p.Labels = map[string]string{"app": "x"}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{...}"
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
		p.Spec.NodeSelector = map[string]string{"gpu": "a10"}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Message: "long message"}}
		full := p.DeepCopy()
		out, err := tr(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := tr(out)
		if err != nil || !equality.Semantic.DeepEqual(out, again) {
			t.Errorf("%s: transform is not idempotent: %v", p.Name, err)
		}
		// A pod without managed resources keeps its identity alone, and the
		// handler reads it as a pod without containers.
		slim, _ := out.(*corev1.Pod)
		if m, ok := out.(*metav1.PartialObjectMetadata); ok {
			slim = &corev1.Pod{ObjectMeta: m.ObjectMeta}
		}
		if meta, ok := out.(*metav1.PartialObjectMetadata); ok != !s.Requests(p) ||
			(ok && (meta.Name != p.Name || meta.Namespace != p.Namespace || meta.UID != p.UID || meta.ResourceVersion != p.ResourceVersion || meta.Labels != nil)) {
			t.Errorf("%s: slimmed to %T %+v", p.Name, out, out)
		}
		if !equality.Semantic.DeepEqual(p, full) {
			t.Errorf("%s: transform modified its input", p.Name)
		}
		if len(slim.ManagedFields) != 0 || slim.Labels != nil || len(slim.Status.Conditions) != 0 || (len(slim.Spec.Containers) > 0 && slim.Spec.Containers[0].Env != nil) {
			t.Errorf("%s: transform kept unused fields: %+v", p.Name, slim)
		}
		l := newLedger(t)
		opt := effective.Options{DeviceMemoryMiB: 24576}
		a, b := l.derive(full, map[string]effective.Options{"nvidia": opt}), l.derive(slim, map[string]effective.Options{"nvidia": opt})
		if (a.rec == nil) != (b.rec == nil) || (a.rec != nil && !sameRecordIgnoringPod(a.rec, b.rec)) || (a.invalid == nil) != (b.invalid == nil) {
			t.Errorf("%s: full %+v, slim %+v", p.Name, a.rec, b.rec)
		}
	}
	node := testnode.Annotated("n1", map[string]string{"zone": "a"}, map[string]string{"gpuadmit.io/gpu-devices": "[]", "other": "x"})
	node.Status.Images = []corev1.ContainerImage{{Names: []string{"big"}}}
	out, err := feed.NodeTransform(node)
	if n := out.(*corev1.Node); err != nil || n.Labels["zone"] != "a" || len(n.Annotations) != 1 || n.Status.Images != nil {
		t.Errorf("node transform: %+v, %v", n, err)
	}
	// The transform keeps the governed keys and every limits. key of an
	// extended resource (a hygon quota without a hygon section): the
	// ledger reports what no family enforces, as it does without it.
	q := testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": "1", "requests.nvidia.com/gpu": "2", "limits.cpu": "3", "pods": "9",
		"limits.hygon.com/dcumem": "8000", "requests.hygon.com/dcumem": "8000"})
	out, err = feed.QuotaTransform([]effective.Family{effective.Nvidia()})(q)
	qq := out.(*corev1.ResourceQuota)
	if _, kept := qq.Spec.Hard["limits.hygon.com/dcumem"]; err != nil || len(qq.Spec.Hard) != 3 || !kept {
		t.Errorf("quota transform kept %v, %v", qq.Spec.Hard, err)
	}
	full, slim := New(Options{Families: []effective.Family{effective.Nvidia()}}), New(Options{Families: []effective.Family{effective.Nvidia()}})
	full.UpsertQuota(q)
	slim.UpsertQuota(qq)
	if a, b := full.Namespace("ns", nil).Problems, slim.Namespace("ns", nil).Problems; len(a) != 1 || !slices.Equal(a, b) {
		t.Errorf("problems of the quota %v, of the slimmed quota %v: want the ungoverned hygon key in both", a, b)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/p"}
	if out, err := tr(tomb); err != nil || out != any(tomb) {
		t.Errorf("tombstones pass through unchanged: %v %v", out, err)
	}
}

func sameRecordIgnoringPod(a, b *podRecord) bool {
	x, y := *a, *b
	x.pod, y.pod = nil, nil
	return sameRecord(&x, &y)
}

// TestFeedWithFakeClientset runs the informers against the fake clientset:
// the initial list is accounted before Synced, and later status updates,
// quota deletions and pod deletions reach the ledger.
func TestFeedWithFakeClientset(t *testing.T) {
	client := fake.NewClientset(
		testnode.WithDevices("node1", map[string]string{"gpu": "a10"}, dev("GPU-0", 24576)),
		testquota.New("team-a", "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "24576"}),
		testquota.New("team-a", "other", map[string]string{"limits.nvidia.com/gpu": "4"}),
		seedPod().InitRunning("convert-weights").Build(),
		testns.New("team-a", map[string]string{"gpu-tier": "bronze"}),
	)
	l := newLedger(t)
	f, err := feed.NewFeed(client, l, feed.Options{Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if got := f.NotSynced(); got != "pods, nodes, resourcequotas, namespaces" {
		t.Fatalf("before start, not synced: %q", got)
	}
	f.Start(ctx)
	eventually(ctx, t, "synced", f.Synced)
	s := l.Namespace("team-a", nil)
	if lim := s.Limits[nvidia]; nvOnly(t, s.Used).MemMiB != 20480 || lim.MemMiB == nil || lim.MemMiB.Value != 24576 || lim.GPU == nil || len(s.Limits) != 1 {
		t.Fatalf("after sync: %+v", s)
	}
	if c := l.Capacity(); c.Nodes["node1"] == nil || c.Nodes["node1"].Labels["gpu"] != "a10" {
		t.Fatalf("capacity after sync: %+v", c.Nodes)
	}
	if !s.LabelsKnown || s.Labels["gpu-tier"] != "bronze" {
		t.Fatalf("namespace labels after sync: known %v, %v", s.LabelsKnown, s.Labels)
	}
	// From now on a pending pod keeps the size first resolved (deriveLocked).
	eventually(ctx, t, "the ledger told the node list is in", func() bool {
		l.mu.RLock()
		defer l.mu.RUnlock()
		return l.nodesListed
	})
	relabelled := testns.New("team-a", map[string]string{"gpu-tier": "gold"})
	if _, err := client.CoreV1().Namespaces().Update(ctx, relabelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "namespace relabelled", func() bool { return l.Namespace("team-a", nil).Labels["gpu-tier"] == "gold" })

	done := seedPod().InitTerminated("convert-weights", 0).AppRunning("server").Build()
	if _, err := client.CoreV1().Pods("team-a").UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "init finished: 10240 MiB", func() bool { return nvOnly(t, l.Namespace("team-a", nil).Used).MemMiB == 10240 })

	if err := client.CoreV1().ResourceQuotas("team-a").Delete(ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "quota deleted, the other kept", func() bool {
		lim := l.Namespace("team-a", nil).Limits[nvidia]
		return lim.GPU == nil && lim.MemMiB != nil && lim.MemMiB.Value == 24576
	})

	if err := client.CoreV1().Pods("team-a").Delete(ctx, "llm-server", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "pod deleted", func() bool { return l.Namespace("team-a", nil).Pods == 0 })
	if got := deviceUsed(l, "node1", "GPU-0"); !got.IsZero() {
		t.Errorf("device usage after delete: %v", got)
	}
}

func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for: %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
