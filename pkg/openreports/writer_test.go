package openreports

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

type reservations map[string][]reservation.Reservation

func (r reservations) Reserved(context.Context) (map[string][]reservation.Reservation, error) {
	return r, nil
}

type harness struct {
	t     *testing.T
	w     *Writer
	l     *ledger.Ledger
	c     client.Client
	clock *clocktesting.FakeClock
}

func newHarness(t *testing.T, pending reservations) *harness {
	scheme := runtime.NewScheme()
	if err := reportsv1alpha1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&reportsv1alpha1.Report{}, "metadata.name", byName).Build()
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	return &harness{t: t, l: l, c: c, clock: clock,
		w: &Writer{Client: c, Reader: c, Ledger: l, Reservations: pending, Clock: clock, MinGap: 10 * time.Second, Log: testr.New(t)}}
}

// round runs one round a gap after the last, and returns ns's Report (nil: none).
func (h *harness) round(ns string) *reportsv1alpha1.Report {
	h.t.Helper()
	h.clock.Step(11 * time.Second)
	if err := h.w.Round(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	var r reportsv1alpha1.Report
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: Name}, &r)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return &r
}

func (h *harness) quota(memMiB string) {
	h.l.UpsertQuota(testquota.New("team-a", "gpu", map[string]string{"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpumem": memMiB}))
}

func results(r *reportsv1alpha1.Report) map[string]reportsv1alpha1.ReportResult {
	out := map[string]reportsv1alpha1.ReportResult{}
	for _, res := range r.Results {
		out[res.Rule] = res
	}
	return out
}

// TestWriterFollowsTheLimits: a namespace with a limit gets a Report that
// passes; a quota lowered under use turns the memory result to fail
// (naming what is charged, reservations included) and the summary with
// it; raised back, pass; the quota deleted, the Report is deleted.
func TestWriterFollowsTheLimits(t *testing.T) {
	h := newHarness(t, reservations{"team-a": {{UID: "r", Name: "r", Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 2048})}}})
	h.l.UpsertPod(testpod.New("a").NS("team-a").UID("a").App("srv", testpod.GPU(1), testpod.Mem(10240)).Build())
	h.l.UpsertPod(testpod.New("b").NS("showback").UID("b").App("srv", testpod.GPU(1), testpod.Mem(1024)).Build())

	h.quota("16384")
	r := h.round("team-a")
	if r == nil || r.Summary != (reportsv1alpha1.ReportSummary{Pass: 2}) || r.Scope.Kind != "Namespace" || r.Scope.Name != "team-a" ||
		r.Source != Source || r.Labels[ManagedBy] != managedBy {
		t.Fatalf("within the limits: %+v", r)
	}
	if h.round("showback") != nil {
		t.Error("a namespace without a GPU limit got a Report")
	}
	passed := results(r)["nvidia.com/gpumem"].Timestamp

	h.quota("12287")
	r = h.round("team-a")
	mem := results(r)["nvidia.com/gpumem"]
	if r.Summary != (reportsv1alpha1.ReportSummary{Pass: 1, Fail: 1}) || mem.Result != resultFail || mem.Severity != severityHigh ||
		!strings.Contains(mem.Description, "12288 MiB charged (10240 used, 2048 reserved), over the limit 12287 MiB of ResourceQuota gpu") ||
		mem.Properties["charged"] != "12288" || mem.Properties["limit"] != "12287" || len(mem.Subjects) != 1 || mem.Subjects[0].Name != "gpu" {
		t.Fatalf("lowered under use: %+v", r)
	}
	if mem.Timestamp == passed {
		t.Error("the result changed but kept its old timestamp")
	}
	if got := results(r)["nvidia.com/gpu"]; got.Timestamp != results(h.round("team-a"))["nvidia.com/gpu"].Timestamp {
		t.Error("an unchanged result's timestamp moved")
	}

	h.quota("16384")
	if r = h.round("team-a"); r.Summary != (reportsv1alpha1.ReportSummary{Pass: 2}) {
		t.Fatalf("raised back: %+v", r.Summary)
	}
	h.l.DeleteQuota("team-a", "gpu")
	if r = h.round("team-a"); r != nil {
		t.Fatalf("no limit left, Report kept: %+v", r)
	}
}

// TestWriterPutsRightWhatOthersDid attacks the Reports: one deleted by
// hand is recreated; one edited by hand to say pass is rewritten at the
// next list; one created by someone else under gpuadmit's name is taken
// over; an invalid quota value is an error result, never a pass.
func TestWriterPutsRightWhatOthersDid(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservations{})
	h.l.UpsertPod(testpod.New("a").NS("team-a").UID("a").App("srv", testpod.GPU(1), testpod.Mem(10240)).Build())
	h.quota("8192")
	if r := h.round("team-a"); r == nil || r.Summary.Fail != 1 {
		t.Fatalf("over: %+v", r)
	}

	if err := h.c.Delete(ctx, &reportsv1alpha1.Report{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: Name}}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(resync)
	if r := h.round("team-a"); r == nil || r.Summary.Fail != 1 {
		t.Fatalf("deleted by hand, not recreated: %+v", r)
	}

	r := h.round("team-a")
	r.Results, r.Summary = nil, reportsv1alpha1.ReportSummary{Pass: 1}
	if err := h.c.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(resync)
	if r := h.round("team-a"); r.Summary.Fail != 1 || len(r.Results) != 2 {
		t.Fatalf("edited by hand, not put right: %+v", r)
	}

	forged := &reportsv1alpha1.Report{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: Name}, Summary: reportsv1alpha1.ReportSummary{Pass: 9}}
	if err := h.c.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	h.l.UpsertQuota(testquota.New("team-b", "gpu", map[string]string{"limits.nvidia.com/gpu": "-1"}))
	r = h.round("team-b")
	if r.Summary != (reportsv1alpha1.ReportSummary{Error: 1}) || r.Labels[ManagedBy] != managedBy ||
		results(r)["nvidia.com/gpu"].Result != resultError {
		t.Fatalf("a forged Report not taken over, or an invalid value not an error: %+v", r)
	}
}

// TestWriterWithoutTheCRD: the writer says which CRD is missing and how
// to turn it off.
func TestWriterWithoutTheCRD(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := reportsv1alpha1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	// What controller-runtime's client answers when discovery has no openreports.io kind.
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&reportsv1alpha1.Report{}, "metadata.name", byName).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return &meta.NoKindMatchError{GroupKind: reportsv1alpha1.SchemeGroupVersion.WithKind("Report").GroupKind(), SearchedVersions: []string{"v1alpha1"}}
		}}).Build()
	w := &Writer{Client: c, Reader: c, Ledger: ledger.New(ledger.Options{}), Reservations: reservations{}, Log: testr.New(t)}
	err := w.Round(context.Background())
	if err == nil || !strings.Contains(err.Error(), "reports.openreports.io") || !strings.Contains(err.Error(), "audit.openReports") {
		t.Fatalf("Round = %v", err)
	}
}

// byName indexes Reports by name, as the API server's metadata.name field
// selector does (the fake client needs an index for a field selector).
func byName(o client.Object) []string { return []string{o.GetName()} }
