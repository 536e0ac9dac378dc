package summary

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// byAnnotation charges each pod to its "user" annotation (the stamp's
// verification is pkg/stamp's; here the user is given).
type byAnnotation struct{}

func (byAnnotation) UserOf(p *corev1.Pod) string                  { return p.Annotations["user"] }
func (byAnnotation) ClaimUserOf(*resourcev1.ResourceClaim) string { return "" }

// gpuPod is a pod of user in ns asking for n devices of 12 GiB each.
func gpuPod(name, ns, user string, n int64) *corev1.Pod {
	return testpod.New(name).NS(ns).UID(name).Annotate("user", user).App("c", testpod.GPU(n), testpod.Mem(12288)).Build()
}

// teamML is GPUClusterQuota ml: namespaces labelled team=ml and ml-train,
// 4 devices and 48 GiB together, 2 devices per user.
func teamML(hard map[string]string) *gpuadmitv1.GPUClusterQuota {
	q := &gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: "ml", Generation: 3},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			Namespaces: []string{"ml-train"}, Hard: corev1.ResourceList{}, PerUser: corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("2")}}}
	for k, v := range hard {
		q.Spec.Hard[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return q
}

// teamWorld is a ledger and an API with team ml over ml-dev (by label),
// ml-train (by name) and ml-old (departed, still charged), a namespace
// outside the team, and the team's object holding one reservation.
func teamWorld(t *testing.T) (*Summarizer, client.Client, *ledger.Ledger, *clocktesting.FakeClock) {
	t.Helper()
	gcq := teamML(map[string]string{"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpumem": "49152"})
	set := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "gpuadmit-system", Name: gpuadmitv1.TeamObjectName("ml")},
		Status: gpuadmitv1.GPUReservationSetStatus{
			Reservations: []gpuadmitv1.Reservation{{PodUID: "r1", PodName: "r1", Namespace: "ml-train", User: "alice",
				Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 12288}}},
			Departures: []gpuadmitv1.Departure{{Namespace: "ml-old"}}}}
	c := fakeClient(t, gcq, set)
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}, Users: byAnnotation{}})
	l.UpsertNamespace(testns.New("ml-dev", map[string]string{"team": "ml"}))
	l.UpsertNamespace(testns.New("ml-train", nil))
	l.UpsertNamespace(testns.New("ml-old", nil)) // relabelled out while charged
	l.UpsertNamespace(testns.New("outside", nil))
	l.UpsertClusterQuota(gcq)
	l.UpsertPod(gpuPod("a1", "ml-dev", "alice", 2))
	l.UpsertPod(gpuPod("b1", "ml-train", "bob", 1))
	l.UpsertPod(gpuPod("o1", "ml-old", "carol", 1))
	l.UpsertPod(gpuPod("x1", "outside", "alice", 3))
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := &Summarizer{Client: c, Ledger: l, Reservations: reserved{}, Namespace: "gpuadmit-system", MinGap: time.Second,
		Clock: clk, Log: logr.Discard()}
	return s, c, l, clk
}

func gcqOf(t *testing.T, c client.Client, name string) *gpuadmitv1.GPUClusterQuota {
	t.Helper()
	q := &gpuadmitv1.GPUClusterQuota{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, q); err != nil {
		t.Fatal(err)
	}
	return q
}

func qty(l corev1.ResourceList, k string) int64 {
	v, ok := l[corev1.ResourceName(k)]
	if !ok {
		return -1
	}
	return v.Value()
}

// TestTeamStatus: the team's usage is the sum over the namespaces it
// counts (selected by label, by name, and departed within the grace),
// never a namespace outside; the team object's unrecorded reservation is
// reserved; per namespace and per user; a team over its limit, and a
// user over the per-user limit, turn WithinLimits False.
func TestTeamStatus(t *testing.T) {
	s, c, _, _ := teamWorld(t)
	if n := s.Round(context.Background()); n < 1 {
		t.Fatalf("nothing written")
	}
	st := gcqOf(t, c, "ml").Status
	// ml-dev 2 + ml-train 1 + ml-old 1 (departed, still charged); outside's 3 are not the team's.
	if got := qty(st.Used, "limits.nvidia.com/gpu"); got != 4 {
		t.Errorf("used %d devices, want 4 (outside's pod must not count, departed ml-old's must): %v", got, st.Used)
	}
	if got := qty(st.Reserved, "limits.nvidia.com/gpu"); got != 1 {
		t.Errorf("reserved %d, want the team object's 1", got)
	}
	if got := qty(st.Hard, "limits.nvidia.com/gpumem"); got != 49152 {
		t.Errorf("hard gpumem %d", got)
	}
	if st.Summary.GPU != "4/4" || st.Summary.GPUMem != "49152/49152" || st.NamespaceCount != 3 || st.ObservedGeneration != 3 {
		t.Errorf("summary %+v, namespaces %d, generation %d", st.Summary, st.NamespaceCount, st.ObservedGeneration)
	}
	want := map[string]bool{"ml-dev": false, "ml-old": true, "ml-train": false}
	for _, n := range st.Namespaces {
		dep, ok := want[n.Namespace]
		if !ok || dep != n.Departing {
			t.Errorf("namespace %s departing=%v, want listed=%v departing=%v", n.Namespace, n.Departing, ok, dep)
		}
		if n.Namespace == "ml-train" && (qty(n.Used, "limits.nvidia.com/gpu") != 1 || qty(n.Reserved, "limits.nvidia.com/gpu") != 1) {
			t.Errorf("ml-train %+v", n)
		}
	}
	if len(st.UserUsage) != 3 || st.UserUsage[0].User != "alice" || qty(st.UserUsage[0].Used, "limits.nvidia.com/gpu") != 2 ||
		qty(st.UserUsage[0].Reserved, "limits.nvidia.com/gpu") != 1 {
		t.Errorf("users %+v", st.UserUsage)
	}
	if st.Users != "alice=3,bob=1,carol=1" {
		t.Errorf("users cell %q", st.Users)
	}
	w := condOf(st.Conditions, gpuadmitv1.ConditionWithinLimits)
	for _, part := range []string{"limits.nvidia.com/gpu: 5 charged (4 used, 1 reserved), over the limit 4",
		`user "alice" limits.nvidia.com/gpu: 3 charged (2 used, 1 reserved), over the limit 2`} {
		if w.Status != metav1.ConditionFalse || !strings.Contains(w.Message, part) {
			t.Errorf("WithinLimits %s %q, want False naming %q", w.Status, w.Message, part)
		}
	}
	if v := condOf(st.Conditions, ConditionTeamValid); v.Status != metav1.ConditionTrue {
		t.Errorf("Valid %+v", v)
	}
}

// TestTeamStatusRecordedReservationCountsOnce: once the ledger records the
// reserved pod, it is used, not also reserved (ledger == recount).
func TestTeamStatusRecordedReservationCountsOnce(t *testing.T) {
	s, c, l, clk := teamWorld(t)
	s.Round(context.Background())
	l.UpsertPod(gpuPod("r1", "ml-train", "alice", 1))
	clk.Step(2 * time.Second)
	s.Round(context.Background())
	st := gcqOf(t, c, "ml").Status
	if u, r := qty(st.Used, "limits.nvidia.com/gpu"), qty(st.Reserved, "limits.nvidia.com/gpu"); u != 5 || r != 0 {
		t.Errorf("used %d reserved %d, want 5 and 0: the recorded reservation counted twice or lost", u, r)
	}
}

// TestTeamStatusWrittenOnlyWhenChanged: a second round without a change
// writes nothing; a change within MinGap waits.
func TestTeamStatusWrittenOnlyWhenChanged(t *testing.T) {
	s, c, l, clk := teamWorld(t)
	ctx := context.Background()
	s.Round(ctx)
	rv := gcqOf(t, c, "ml").ResourceVersion
	clk.Step(2 * time.Second)
	if n := s.Round(ctx); n != 0 || gcqOf(t, c, "ml").ResourceVersion != rv {
		t.Fatalf("rewritten without a change (%d writes)", n)
	}
	l.DeletePod(gpuPod("b1", "ml-train", "bob", 1))
	clk.Step(2 * time.Second)
	s.Round(ctx)
	l.DeletePod(gpuPod("a1", "ml-dev", "alice", 2))
	clk.Step(100 * time.Millisecond)
	s.Round(ctx)
	if got := qty(gcqOf(t, c, "ml").Status.Used, "limits.nvidia.com/gpu"); got != 3 {
		t.Fatalf("used %d: want 3 (the change within MinGap waits)", got)
	}
	clk.Step(time.Second)
	s.Round(ctx)
	if got := qty(gcqOf(t, c, "ml").Status.Used, "limits.nvidia.com/gpu"); got != 1 {
		t.Fatalf("used %d after MinGap, want 1", got)
	}
}

// TestTeamStatusInvalidKey: a key no family has, and a value not whole,
// turn Valid False naming them.
func TestTeamStatusInvalidKey(t *testing.T) {
	gcq := teamML(map[string]string{"limits.nvidia.com/gpu": "1.5", "limits.example.com/fpga": "2"})
	c := fakeClient(t, gcq)
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	l.UpsertClusterQuota(gcq)
	s := &Summarizer{Client: c, Ledger: l, Reservations: reserved{}, Clock: clocktesting.NewFakeClock(time.Unix(1000, 0)), Log: logr.Discard()}
	s.Round(context.Background())
	v := condOf(gcqOf(t, c, "ml").Status.Conditions, ConditionTeamValid)
	if v.Status != metav1.ConditionFalse || !strings.Contains(v.Message, "limits.example.com/fpga") || !strings.Contains(v.Message, "limits.nvidia.com/gpu") {
		t.Errorf("Valid %s %q, want False naming both keys", v.Status, v.Message)
	}
}

// TestNamespaceUsers: GPUUsage's users cell lists each user's devices,
// reservations of the namespace's own object included.
func TestNamespaceUsers(t *testing.T) {
	s, c, _, _ := teamWorld(t)
	s.Reservations = reserved{"ml-dev": {{UID: "q", Name: "q", User: "bob", Demand: vec(1, 1024)}}}
	s.Round(context.Background())
	if got := summaryOf(t, c, "ml-dev").Status.Users; got != "alice=2,bob=1" {
		t.Errorf("ml-dev users %q", got)
	}
	if got := summaryOf(t, c, "outside").Status.Users; got != "alice=3" {
		t.Errorf("outside users %q", got)
	}
}

func condOf(cs []metav1.Condition, typ string) metav1.Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
