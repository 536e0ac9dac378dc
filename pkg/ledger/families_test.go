package ledger

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/go-logr/logr/testr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// TestPodOfTwoFamiliesIsChargedToBoth: a pod that asks for nvidia GPUs and
// Ascend NPUs (in separate containers and in one container) is charged to
// both families in Used, each by its own lifecycle formula; deleting it
// releases both; a ledger that reads nvidia alone charges only nvidia.
func TestPodOfTwoFamiliesIsChargedToBoth(t *testing.T) {
	mixed := func() *testpod.Builder {
		return testpod.New("mixed").NS("ns").
			Init("load", npu(1), npuMem(30000)). // Ascend-only init
			App("train", gpu(1), mem(8192)).
			App("infer", npu(2), npuMem(16384), npuCores(50)).
			App("both", gpu(1), mem(4096), cores(30), npu(1), npuMem(2048))
	}
	// steady: nvidia 2 GPUs, 8192+4096 MiB, 30 cores; Ascend 3 NPUs,
	// 2×16384+2048 MiB, 2×50 cores. The init's 30000 MiB is below the
	// steady 34816 MiB, its 1 NPU below 3: the peak is the steady state.
	wantNv, wantAsc := nv(2, 8192+4096, 30), asc(3, 2*16384+2048, 100)
	want := plus(t, wantNv, wantAsc)

	l := newTwoFamilyLedger(t)
	l.UpsertPod(mixed().InitRunning("load").Build())
	s := l.Namespace("ns", nil)
	if !same(s.Used, want) || s.Pods != 1 || len(s.Problems) != 0 || len(s.Unresolved) != 0 {
		t.Fatalf("init running: used %v in %d pods (problems %v, unresolved %v); want %v in 1", s.Used, s.Pods, s.Problems, s.Unresolved, want)
	}
	if err := usageInvariant(s.Used); err != nil || !slices.Equal(s.Used.Families(), []string{ascendName, nvidia}) {
		t.Errorf("used %v: %v; want exactly the two families", s.Used, err)
	}
	if _, used, _ := stored(l, string(mixed().Build().UID)); !same(used, want) {
		t.Errorf("stored %v, want %v", used, want)
	}

	// A large Ascend init: the Ascend peak is the init, nvidia stays steady.
	big := func() *testpod.Builder {
		return testpod.New("big").NS("ns").Init("load", npu(4), npuMem(60000)).App("train", gpu(1), mem(1000)).App("infer", npu(1), npuMem(1000))
	}
	l.UpsertPod(big().InitRunning("load").Build())
	want2 := plus(t, want, plus(t, nv(1, 1000, 0), asc(4, 4*60000, 0)))
	if s := l.Namespace("ns", nil); !same(s.Used, want2) || s.Pods != 2 {
		t.Fatalf("with a large Ascend init: used %v in %d pods, want %v in 2", s.Used, s.Pods, want2)
	}
	l.UpsertPod(big().InitTerminated("load", 0).AppRunning("train").AppRunning("infer").Build())
	want3 := plus(t, want, plus(t, nv(1, 1000, 0), asc(1, 1000, 0)))
	if s := l.Namespace("ns", nil); !same(s.Used, want3) {
		t.Fatalf("the Ascend init done: used %v, want %v (only the Ascend usage drops)", s.Used, want3)
	}

	l.DeletePod(mixed().Build())
	if s := l.Namespace("ns", nil); !same(s.Used, plus(t, nv(1, 1000, 0), asc(1, 1000, 0))) || s.Pods != 1 {
		t.Fatalf("mixed deleted: used %v in %d pods", s.Used, s.Pods)
	}
	l.UpsertPod(big().InitTerminated("load", 0).Phase(corev1.PodSucceeded).Build())
	if s := l.Namespace("ns", nil); !s.Used.IsZero() || s.Used != nil || s.Pods != 0 {
		t.Fatalf("everything released: used %#v in %d pods, want nil in 0", s.Used, s.Pods)
	}
	if st := l.Snapshot(nil).Stats; st.Pods != 0 || st.Namespaces != 0 {
		t.Errorf("stats %+v, want an empty ledger", st)
	}

	// The nvidia-only ledger: the Ascend resources are not its business.
	only := newLedger(t)
	only.UpsertPod(mixed().InitRunning("load").Build())
	only.UpsertPod(testpod.New("npu-only").NS("ns").App("a", npu(1), npuMem(1000)).Build())
	if s := only.Namespace("ns", nil); !same(s.Used, wantNv) || s.Pods != 1 {
		t.Errorf("nvidia-only ledger: used %v in %d pods, want %v in 1 (the NPU-only pod is no GPU pod)", s.Used, s.Pods, wantNv)
	}
}

// TestReservationsOfTwoFamilies: a reservation's demand counts per family in
// Reserved and Unconfirmed.
func TestReservationsOfTwoFamilies(t *testing.T) {
	l := newTwoFamilyLedger(t)
	pending := []reservation.Reservation{
		{UID: "u1", Name: "p1", Demand: plus(t, nv(1, 1000, 0), asc(2, 4000, 0))},
		{UID: "u2", Name: "p2", Demand: asc(1, 500, 10), Unconfirmed: true},
	}
	s := l.Namespace("ns", pending)
	if want := plus(t, nv(1, 1000, 0), asc(3, 4500, 10)); !same(s.Reserved, want) || s.Reservations != 2 {
		t.Errorf("reserved %v in %d, want %v in 2", s.Reserved, s.Reservations, want)
	}
	if !same(s.Unconfirmed, asc(1, 500, 10)) {
		t.Errorf("unconfirmed %v, want %v", s.Unconfirmed, asc(1, 500, 10))
	}
	// The watch records u1: its record counts in Used, per family, and its
	// reservation no longer does.
	l.UpsertPod(testpod.New("p1").NS("ns").UID("u1").RV("3").App("a", gpu(1), mem(1000), npu(2), npuMem(2000)).Build())
	s = l.Namespace("ns", pending)
	if !same(s.Used, plus(t, nv(1, 1000, 0), asc(2, 4000, 0))) || !same(s.Reserved, asc(1, 500, 10)) || s.Reservations != 1 {
		t.Errorf("recorded: used %v, reserved %v in %d", s.Used, s.Reserved, s.Reservations)
	}
}

// TestSnapshotsKeepTheirUsage: a snapshot handed out keeps its usage while
// the ledger changes (the ledger never modifies a Usage it handed out).
func TestSnapshotsKeepTheirUsage(t *testing.T) {
	l := newTwoFamilyLedger(t)
	l.UpsertPod(testpod.New("a").NS("ns").App("c", gpu(1), mem(1000), npu(1), npuMem(2000)).Build())
	before := l.Namespace("ns", nil)
	l.UpsertPod(testpod.New("b").NS("ns").App("c", gpu(1), mem(500), npu(1), npuMem(700)).Build())
	l.DeletePod(testpod.New("a").NS("ns").Build())
	want := plus(t, nv(1, 1000, 0), asc(1, 2000, 0))
	if !same(before.Used, want) {
		t.Errorf("an earlier snapshot changed: %v, want %v", before.Used, want)
	}
	if now := l.Namespace("ns", nil).Used; !same(now, plus(t, nv(1, 500, 0), asc(1, 700, 0))) {
		t.Errorf("now %v", now)
	}
}

// TestUnresolvedNPUs: an Ascend container asking for whole NPUs (no memory)
// has no device size to resolve against (node capacity describes the
// nvidia devices): it stays unresolved, named once, whatever nvidia nodes
// appear; the nvidia percentage of the same container resolves.
func TestUnresolvedNPUs(t *testing.T) {
	l := newTwoFamilyLedger(t)
	l.UpsertPod(testpod.New("p").NS("ns").App("c", gpu(1), pct(50), npu(2)).Build())
	s := l.Namespace("ns", nil)
	if !same(s.Used, plus(t, nv(1, 0, 0), asc(2, 0, 0))) || len(s.Unresolved) != 1 || !slices.Equal(s.Unresolved[0].Containers, []string{"c"}) {
		t.Fatalf("no node: used %v, unresolved %v; want the counts, container c unresolved once", s.Used, s.Unresolved)
	}
	l.UpsertNode(testnode.WithDevices("n1", nil, dev("GPU-1", 24576)))
	s = l.Namespace("ns", nil)
	if !same(s.Used, plus(t, nv(1, 12288, 0), asc(2, 0, 0))) || len(s.Unresolved) != 1 || !slices.Equal(s.Unresolved[0].Containers, []string{"c"}) {
		t.Fatalf("nvidia node known: used %v, unresolved %v; want 50%% of 24576 for nvidia, the NPUs still unresolved", s.Used, s.Unresolved)
	}
}

// TestInvalidRequestOfTheSecondFamily: an invalid Ascend request makes the
// pod invalid, reported, and charged to no family.
func TestInvalidRequestOfTheSecondFamily(t *testing.T) {
	l := newTwoFamilyLedger(t)
	l.UpsertPod(testpod.New("bad").NS("ns").App("a", gpu(1), mem(1000), testpod.Res(ascendCount, "0.5")).Build())
	s := l.Namespace("ns", nil)
	if !s.Used.IsZero() || s.Pods != 0 || len(s.Problems) != 1 || s.Problems[0].Kind != ProblemPod ||
		!strings.Contains(s.Problems[0].Message, string(ascendCount)) {
		t.Fatalf("used %v in %d pods, problems %v; want nothing charged and the Ascend request reported", s.Used, s.Pods, s.Problems)
	}
	if st := l.Snapshot(nil).Stats; st.InvalidPods != 1 {
		t.Errorf("stats %+v, want 1 invalid pod", st)
	}
}

// TestQuotaLimitsOfTwoFamilies: limits.<name> of each family set that
// family's limits; over several quotas the tightest wins per family and
// dimension; a family no quota limits is absent; each family converts its
// memory with its own memoryFactor.
func TestQuotaLimitsOfTwoFamilies(t *testing.T) {
	l := newTwoFamilyLedger(t)
	l.UpsertQuota(testquota.New("ns", "q1", map[string]string{
		"limits." + string(ascendMem): "65536", "limits.nvidia.com/gpumem": "24576", "limits." + string(ascendCores): "300",
	}))
	l.UpsertQuota(testquota.New("ns", "q2", map[string]string{
		"limits." + string(ascendMem): "32768", "limits." + string(ascendCount): "4", "limits.nvidia.com/gpumem": "40000",
	}))
	s := l.Namespace("ns", nil)
	want := map[string]limitsShown{
		nvidia:     {mem: "24576/q1/limits.nvidia.com/gpumem"},
		ascendName: {gpu: "4/q2/limits." + string(ascendCount), mem: "32768/q2/limits." + string(ascendMem), cores: "300/q1/limits." + string(ascendCores)},
	}
	if got := showLimits(s.Limits); !equalShown(got, want) {
		t.Fatalf("limits %v, want %v", got, want)
	}
	if len(s.Quotas) != 2 || s.Quotas[0].Name != "q1" || s.Quotas[1].Name != "q2" {
		t.Fatalf("quotas %+v", s.Quotas)
	}
	if got := showLimits(s.Quotas[1].Limits); !equalShown(got, map[string]limitsShown{
		nvidia:     {mem: "40000/q2/limits.nvidia.com/gpumem"},
		ascendName: {gpu: "4/q2/limits." + string(ascendCount), mem: "32768/q2/limits." + string(ascendMem)},
	}) {
		t.Errorf("q2's own limits %v", got)
	}
	// The snapshot's limits are shared and read only: a quota's change
	// replaces them, and leaves a snapshot taken before as it was.
	before := showLimits(s.Limits)
	l.DeleteQuota("ns", "q2")
	if got := showLimits(s.Limits); !equalShown(got, before) || len(s.Quotas) != 2 {
		t.Errorf("a quota's deletion changed an earlier snapshot: limits %v, %d quotas", got, len(s.Quotas))
	}
	if got := showLimits(l.Namespace("ns", nil).Limits); !equalShown(got, map[string]limitsShown{
		nvidia:     {mem: "24576/q1/limits.nvidia.com/gpumem"},
		ascendName: {mem: "65536/q1/limits." + string(ascendMem), cores: "300/q1/limits." + string(ascendCores)},
	}) {
		t.Errorf("q2 deleted: %v", got)
	}
	l.UpsertQuota(testquota.New("ns", "q1", map[string]string{"limits." + string(ascendCount): "2"}))
	if got := showLimits(l.Namespace("ns", nil).Limits); !equalShown(got, map[string]limitsShown{ascendName: {gpu: "2/q1/limits." + string(ascendCount)}}) {
		t.Errorf("q1 limits Ascend only: %v, want no nvidia limits", got)
	}
	l.DeleteQuota("ns", "q1")
	if s := l.Namespace("ns", nil); s.Limits != nil || s.Quotas != nil {
		t.Errorf("every quota deleted: limits %v, quotas %v", s.Limits, s.Quotas)
	}

	// memoryFactor per family.
	fams := twoFamilies()
	fams[1].MemoryFactor = 1024
	f := New(Options{Families: fams})
	f.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits." + string(ascendMem): "32", "limits.nvidia.com/gpumem": "32"}))
	if got := showLimits(f.Namespace("ns", nil).Limits); !equalShown(got, map[string]limitsShown{
		nvidia: {mem: "32/q/limits.nvidia.com/gpumem"}, ascendName: {mem: "32768/q/limits." + string(ascendMem)},
	}) {
		t.Errorf("Ascend memoryFactor 1024: %v", got)
	}
}

// TestInvalidQuotaOfTheSecondFamily: an Ascend quota value that is not a
// whole number is reported as written and enforced rounded down (never
// more than written); a negative one blocks its dimension, an invalid
// limit winning over a valid one; nvidia's limits are untouched.
func TestInvalidQuotaOfTheSecondFamily(t *testing.T) {
	for _, tt := range []struct{ value, written, enforced string }{
		{"1.5", "1.5", "1"}, {"100m", "0.1", "0"}, {"-1", "-1", "invalid"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			l := newTwoFamilyLedger(t)
			l.UpsertQuota(testquota.New("ns", "bad", map[string]string{"limits." + string(ascendMem): tt.value, "limits.nvidia.com/gpu": "2"}))
			l.UpsertQuota(testquota.New("ns", "good", map[string]string{"limits." + string(ascendMem): "65536"}))
			s := l.Namespace("ns", nil)
			if len(s.Problems) != 1 {
				t.Fatalf("problems %v, want the invalid Ascend value", s.Problems)
			}
			p := s.Problems[0]
			if p.Kind != ProblemQuota || p.Namespace != "ns" || p.Name != "bad" || p.Key != "limits."+string(ascendMem) || p.Value != tt.written || p.Message == "" {
				t.Errorf("problem %+v must name the quota, the Ascend key and the value as written", p)
			}
			if got := showLimits(s.Limits); !equalShown(got, map[string]limitsShown{
				nvidia:     {gpu: "2/bad/limits.nvidia.com/gpu"},
				ascendName: {mem: tt.enforced + "/bad/limits." + string(ascendMem)},
			}) {
				t.Errorf("limits %v: Ascend memory must be %s (never more than written), nvidia untouched", got, tt.enforced)
			}
			if all := l.Snapshot(nil).Problems; len(all) != 1 || all[0] != p {
				t.Errorf("snapshot problems %v", all)
			}
		})
	}
}

// TestNativeRequestQuotaOfTheSecondFamily: requests.<Ascend name> keys are
// reported as native request quotas (ResourceQuota counts them per
// container), not read as limits; the quota transform keeps them and the
// Ascend limits, and nothing else.
func TestNativeRequestQuotaOfTheSecondFamily(t *testing.T) {
	l := newTwoFamilyLedger(t)
	hard := map[string]string{"requests." + string(ascendMem): "4096", "requests." + string(ascendCount): "2", "requests.nvidia.com/gpu": "1"}
	l.UpsertQuota(testquota.New("ns", "native", hard))
	s := l.Namespace("ns", nil)
	wantNative := []string{"native: requests." + string(ascendCount), "native: requests." + string(ascendMem), "native: requests.nvidia.com/gpu"}
	got := slices.Sorted(slices.Values(s.NativeRequestQuotas))
	if !slices.Equal(got, wantNative) || s.Limits != nil || len(s.Problems) != 0 {
		t.Errorf("native %v, limits %v, problems %v; want %v and no limits", s.NativeRequestQuotas, s.Limits, s.Problems, wantNative)
	}
	// An nvidia-only ledger knows nothing of the Ascend keys.
	only := newLedger(t)
	only.UpsertQuota(testquota.New("ns", "native", hard))
	if got := only.Namespace("ns", nil).NativeRequestQuotas; !slices.Equal(got, []string{"native: requests.nvidia.com/gpu"}) {
		t.Errorf("nvidia-only ledger: native %v", got)
	}

	q := testquota.New("ns", "q", map[string]string{
		"requests." + string(ascendMem): "1", "limits." + string(ascendCores): "2", "limits.nvidia.com/gpumem": "3",
		"limits.cpu": "4", "huawei.com/Ascend910B2": "5", "requests.huawei.com/Ascend310P": "6",
	})
	out, err := feed.QuotaTransform(twoFamilies())(q)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range out.(*corev1.ResourceQuota).Spec.Hard {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	if want := []string{"limits." + string(ascendCores), "limits.nvidia.com/gpumem", "requests." + string(ascendMem)}; !slices.Equal(keys, want) {
		t.Errorf("quota transform kept %v, want %v", keys, want)
	}
}

// TestPodTransformKeepsTheSecondFamily: the slim pod keeps the Ascend
// resources, so that it yields the same record as the full object; a pod
// naming Ascend resources alone is no metadata-only pod.
func TestPodTransformKeepsTheSecondFamily(t *testing.T) {
	tr := podwire.PodTransform(twoFamilies())
	for _, b := range []*testpod.Builder{
		testpod.New("npu").NS("ns").Init("i", npu(1), npuMem(9000)).App("a", npu(2), npuMem(1000), npuCores(20), testpod.CPU("2")).InitRunning("i"),
		testpod.New("both").NS("ns").App("a", gpu(1), mem(100), npu(1), npuMem(200)).App("b", testpod.Request(npu(1), npuMem(300))),
	} {
		full := b.Build()
		full.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
		out, err := tr(full.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		slim, ok := out.(*corev1.Pod)
		if !ok {
			t.Fatalf("%s: slimmed to %T", full.Name, out)
		}
		if slim.Spec.Containers[0].Env != nil {
			t.Errorf("%s: transform kept the env", full.Name)
		}
		l := newTwoFamilyLedger(t)
		a, c := l.derive(full, nil), l.derive(slim, nil)
		if a.rec == nil || c.rec == nil || !sameRecordIgnoringPod(a.rec, c.rec) || a.rec.used.Of(ascendName).IsZero() {
			t.Errorf("%s: full %+v, slim %+v", full.Name, a.rec, c.rec)
		}
	}
	// And an nvidia-only transform drops an NPU-only pod to its identity.
	out, err := podwire.PodTransform([]effective.Family{effective.Nvidia()})(testpod.New("npu").NS("ns").App("a", npu(1)).Build())
	if _, ok := out.(*metav1.PartialObjectMetadata); err != nil || !ok {
		t.Errorf("nvidia-only transform of an NPU pod: %T, %v", out, err)
	}
}

// limitsShown renders one family's Limits: "value/quota/key",
// "invalid/quota/key", or "" for no limit.
type limitsShown struct{ gpu, mem, cores string }

func showLimit(l *Limit) string {
	switch {
	case l == nil:
		return ""
	case l.Invalid:
		return "invalid/" + l.Quota + "/" + l.Key
	}
	return strconv.FormatInt(l.Value, 10) + "/" + l.Quota + "/" + l.Key
}

func showLimits(m map[string]Limits) map[string]limitsShown {
	out := map[string]limitsShown{}
	for f, l := range m {
		out[f] = limitsShown{showLimit(l.GPU), showLimit(l.MemMiB), showLimit(l.Cores)}
	}
	return out
}

func equalShown(a, b map[string]limitsShown) bool { return maps.Equal(a, b) }

// TestFeedOfTwoFamilies: the informers slim pods and quotas with every
// family of the sink, so the Ascend requests and limits reach the ledger.
func TestFeedOfTwoFamilies(t *testing.T) {
	client := fake.NewClientset(
		testquota.New("team-a", "npu-quota", map[string]string{"limits." + string(ascendMem): "65536", "limits.nvidia.com/gpu": "2"}),
		testpod.New("npu").NS("team-a").App("a", npu(2), npuMem(8000)).Build(),
		testpod.New("both").NS("team-a").App("a", gpu(1), mem(1000), npu(1), npuMem(500)).Build(),
	)
	l := newTwoFamilyLedger(t)
	feed, err := feed.NewFeed(client, l, feed.Options{Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	feed.Start(ctx)
	eventually(ctx, t, "synced", feed.Synced)
	s := l.Namespace("team-a", nil)
	if want := plus(t, nv(1, 1000, 0), asc(3, 16500, 0)); !same(s.Used, want) || s.Pods != 2 {
		t.Errorf("used %v in %d pods, want %v in 2", s.Used, s.Pods, want)
	}
	if got := showLimits(s.Limits); !equalShown(got, map[string]limitsShown{
		nvidia:     {gpu: "2/npu-quota/limits.nvidia.com/gpu"},
		ascendName: {mem: "65536/npu-quota/limits." + string(ascendMem)},
	}) {
		t.Errorf("limits %v", got)
	}
}
