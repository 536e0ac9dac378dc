package summary

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// recorded are the Warning Events a Summarizer recorded.
type recorded []string

func (r *recorded) Warn(_ context.Context, ref corev1.ObjectReference, reason, message string) {
	*r = append(*r, ref.Kind+" "+ref.Namespace+"/"+ref.Name+" uid="+string(ref.UID)+" "+reason+": "+message)
}

// TestQuotaProblemsAreConditionsAndEvents: a quota on the memory of a
// family gpuadmit does not govern (hygon without its section), a memory
// limit in bytes and a limit that is not whole each turn a condition of
// the namespace's GPUUsage False and are one Warning Event on their
// ResourceQuota, recorded once (not once per round), again only after the
// problem was fixed and made again.
func TestQuotaProblemsAreConditionsAndEvents(t *testing.T) {
	c := fakeClient(t)
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	hygon := testquota.New("ns", "hygon", map[string]string{"limits.hygon.com/dcumem": "8000"})
	hygon.UID = "uid-hygon"
	l.UpsertQuota(hygon)
	l.UpsertQuota(testquota.New("ns", "bytes", map[string]string{"limits.nvidia.com/gpumem": "24Gi", "limits.nvidia.com/gpu": "1.5"}))
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var ev recorded
	s := &Summarizer{Client: c, Ledger: l, Reservations: reserved{}, Clock: clk, Events: &ev, Log: logr.Discard()}
	ctx := context.Background()
	s.Round(ctx)

	st := summaryOf(t, c, "ns").Status
	if cond := condition(st, gpuadmitv1.ConditionQuotasEnforced); cond.Status != metav1.ConditionFalse || cond.Reason != ReasonUngovernedQuotaKey ||
		!strings.Contains(cond.Message, `ungoverned ns/hygon: limits.hygon.com/dcumem "8000"`) || !strings.Contains(cond.Message, "hygon section") {
		t.Errorf("QuotasEnforced %+v", cond)
	}
	if cond := condition(st, gpuadmitv1.ConditionQuotasValid); cond.Status != metav1.ConditionFalse ||
		!strings.Contains(cond.Message, `limits.nvidia.com/gpumem "24Gi": a memory limit in bytes: enforced as 24576 MiB`) ||
		!strings.Contains(cond.Message, `limits.nvidia.com/gpu "1.5": not a whole number: enforced as 1`) {
		t.Errorf("QuotasValid %+v", cond)
	}
	if st.Summary.GPUMem != "0/24576" || st.Summary.GPU != "0/1" {
		t.Errorf("summary %+v: want the limits as enforced", st.Summary)
	}
	want := []string{
		`ResourceQuota ns/bytes uid=uid-rq-ns-bytes QuotaValueNotAsWritten: limits.nvidia.com/gpu "1.5": not a whole number`,
		`ResourceQuota ns/bytes uid=uid-rq-ns-bytes QuotaValueNotAsWritten: limits.nvidia.com/gpumem "24Gi": a memory limit in bytes`,
		`ResourceQuota ns/hygon uid=uid-hygon UngovernedQuotaKey: limits.hygon.com/dcumem "8000": a resource of the hygon device family`,
	}
	checkEvents(t, ev, want)

	clk.Step(time.Minute)
	s.Round(ctx)
	checkEvents(t, ev, want) // not again

	l.UpsertQuota(testquota.New("ns", "hygon", map[string]string{"limits.nvidia.com/gpucores": "100"}))
	clk.Step(time.Minute)
	s.Round(ctx)
	if cond := condition(summaryOf(t, c, "ns").Status, gpuadmitv1.ConditionQuotasEnforced); cond.Status != metav1.ConditionTrue {
		t.Errorf("fixed, QuotasEnforced %+v", cond)
	}
	l.UpsertQuota(hygon)
	clk.Step(time.Minute)
	s.Round(ctx)
	checkEvents(t, ev, append(want, want[2])) // made again: recorded again
}

func checkEvents(t *testing.T, got recorded, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	sorted := append(recorded(nil), got[:min(len(got), 3)]...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if sorted[j] < sorted[i] {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	copy(got, sorted)
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("event %d\n%s\nwant prefix\n%s", i, got[i], w)
		}
	}
}
