package summary

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

func condition(st gpuadmitv1.GPUUsageStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// TestSummarize: used, reserved and hard per resource, the printer
// columns, and conditions naming what gpuadmit cannot use.
func TestSummarize(t *testing.T) {
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	l.UpsertQuota(testquota.New("ns", "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "24576", "limits.nvidia.com/gpu": "4"}))
	l.UpsertQuota(testquota.New("ns", "broken", map[string]string{"limits.nvidia.com/gpucores": "1.5"}))
	l.UpsertPod(testpod.New("a").NS("ns").UID("a").Init("load", testpod.GPU(1), testpod.Mem(20480)).App("srv", testpod.GPU(1), testpod.Mem(10240)).InitRunning("load").Build())
	l.UpsertPod(testpod.New("pct").NS("ns").UID("pct").App("c", testpod.GPU(1), testpod.MemPct(50)).Build())
	pending := []reservation.Reservation{{UID: "r", Name: "r", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1024})}}
	now := time.Unix(1000, 0)
	st := summarize(l.Namespace("ns", pending), []effective.Family{effective.Nvidia()}, nil, now)

	if st.Summary != (gpuadmitv1.Summary{GPU: "2/4", GPUMem: "20480/24576", GPUCores: "0/1"}) {
		t.Errorf("summary %+v", st.Summary)
	}
	mem := st.Resources[1]
	if mem.Resource != "nvidia.com/gpumem" || mem.Used != 20480 || mem.Reserved != 1024 || mem.Hard == nil || *mem.Hard != 24576 || mem.ResourceQuota != "gpu-quota" {
		t.Errorf("gpumem %+v", mem)
	}
	if c := condition(st, gpuadmitv1.ConditionQuotasValid); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "broken") || !strings.Contains(c.Message, `"1.5"`) || strings.Contains(c.Message, "1500m") {
		t.Errorf("QuotasValid %+v", c)
	}
	if c := condition(st, gpuadmitv1.ConditionDemandResolved); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "pct (containers c)") {
		t.Errorf("DemandResolved %+v", c)
	}
	if c := condition(st, gpuadmitv1.ConditionPodsValid); c.Status != metav1.ConditionTrue {
		t.Errorf("PodsValid %+v", c)
	}
	// A condition keeps its transition time while its status stays.
	later := summarize(l.Namespace("ns", pending), []effective.Family{effective.Nvidia()}, st.Conditions, now.Add(time.Hour))
	if c := condition(later, gpuadmitv1.ConditionQuotasValid); !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("transition time moved without a change: %v", c.LastTransitionTime)
	}
	if !sameSummary(st, later) {
		t.Error("the same namespace summarized twice differs")
	}
}

// TestSummarizerWritesOnlyChangesAtMostOncePerGap: a round writes a
// namespace only when its summary changed and its last write is MinGap
// old; the write never touches the reservations' object, and creates the
// GPUUsage of a namespace that has a limit but none yet.
func TestSummarizerWritesOnlyChangesAtMostOncePerGap(t *testing.T) {
	held := gpuadmitv1.Reservation{PodUID: "r", PodName: "r", Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 1024}}
	base := fakeClient(t, &gpuadmitv1.GPUUsage{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName}},
		&gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName},
			Status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{held}, ReservationCount: 1}})
	setRV := reservationSet(t, base, "ns").ResourceVersion
	var patches atomic.Int64
	c := interceptor.NewClient(base, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		patches.Add(1)
		return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
	}})
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": "8192"}))
	l.UpsertQuota(testquota.New("other", "q", map[string]string{"limits.nvidia.com/gpu": "2"}))
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := &Summarizer{Client: c, Ledger: l, Reservations: reserved{"ns": {{UID: "r", Name: "r", Demand: vec(1, 1024)}}},
		MinGap: time.Second, Clock: clk, Log: logr.Discard()}
	ctx := context.Background()

	if n := s.Round(ctx); n != 2 || patches.Load() != 2 {
		t.Fatalf("first round wrote %d (%d patches), want both namespaces", n, patches.Load())
	}
	u := summaryOf(t, base, "ns")
	if u.Status.Summary.GPUMem != "0/8192" || u.Status.Resources[1].Reserved != 1024 {
		t.Fatalf("after the first write: %+v", u.Status)
	}
	// The summary is another object than the reservations: no summary write
	// moves the resourceVersion an admission's compare-and-swap carries.
	if set := reservationSet(t, base, "ns"); set.ResourceVersion != setRV || len(set.Status.Reservations) != 1 {
		t.Fatalf("the summary write touched the GPUReservationSet: resourceVersion %s, was %s; %+v", set.ResourceVersion, setRV, set.Status)
	}
	if got := summaryOf(t, base, "other").Status.Summary.GPU; got != "0/2" {
		t.Fatalf("the namespace without an object got %q", got)
	}
	if n := s.Round(ctx); n != 0 {
		t.Fatalf("nothing changed, yet %d written", n)
	}
	l.UpsertPod(testpod.New("p").NS("ns").UID("p").App("c", testpod.GPU(1), testpod.Mem(4096)).Build())
	clk.SetTime(clk.Now().Add(500 * time.Millisecond))
	if n := s.Round(ctx); n != 0 {
		t.Fatalf("written again within MinGap")
	}
	clk.SetTime(clk.Now().Add(600 * time.Millisecond))
	if n := s.Round(ctx); n != 1 || summaryOf(t, base, "ns").Status.Summary.GPUMem != "4096/8192" {
		t.Fatalf("the change was not written after MinGap: %d, %q", n, summaryOf(t, base, "ns").Status.Summary.GPUMem)
	}
}

// reserved are fixed reservations by namespace.
type reserved map[string][]reservation.Reservation

func (r reserved) Reserved(context.Context) (map[string][]reservation.Reservation, error) {
	return r, nil
}

// TestSummarizeWithinLimits: a quota lowered under the namespace's use
// turns WithinLimits False, naming the resource, what is charged and the
// limit; raised back, True again.
func TestSummarizeWithinLimits(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	l := ledger.New(ledger.Options{Families: fams})
	l.UpsertPod(testpod.New("a").NS("ns").UID("a").App("srv", testpod.GPU(1), testpod.Mem(10240)).Build())
	pending := []reservation.Reservation{{UID: "r", Name: "r", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 2048})}}
	now := time.Unix(1000, 0)
	for _, tt := range []struct {
		name, limit string
		status      metav1.ConditionStatus
		message     string
	}{
		{name: "within", limit: "12288", status: metav1.ConditionTrue, message: "usage is within every GPU limit"},
		{name: "lowered under use, reservations included", limit: "12287", status: metav1.ConditionFalse,
			message: "nvidia.com/gpumem: 12288 MiB charged (10240 used, 2048 reserved), over the limit 12287 MiB of ResourceQuota gpu"},
		{name: "raised back", limit: "16384", status: metav1.ConditionTrue, message: "usage is within every GPU limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l.UpsertQuota(testquota.New("ns", "gpu", map[string]string{"limits.nvidia.com/gpumem": tt.limit}))
			c := condition(summarize(l.Namespace("ns", pending), fams, nil, now), gpuadmitv1.ConditionWithinLimits)
			if c.Status != tt.status || !strings.Contains(c.Message, tt.message) {
				t.Errorf("WithinLimits = %s %q, want %s containing %q", c.Status, c.Message, tt.status, tt.message)
			}
			if tt.status == metav1.ConditionFalse && c.Reason != "OverLimit" {
				t.Errorf("reason %q", c.Reason)
			}
		})
	}
}
