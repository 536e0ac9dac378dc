package budget

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// TestSpecProblemsNamed: a key no governed family has, a negative value
// and an unknown time zone are named in the standing's problems and in a
// Valid=False condition; the other keys are enforced (the negative one as
// 0: fails closed), the window as the same calendar window in UTC.
func TestSpecProblemsNamed(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0.Add(time.Hour))
	tr := newTracker(clk)
	b := gb("ml", "bad", gpuadmitv1.BudgetWindow{Calendar: gpuadmitv1.WindowDaily, TimeZone: "Mars/Olympus"}, "1")
	b.Spec.Hard["example.com/fpga"] = resource.MustParse("5")
	b.Spec.Hard["nvidia.com/gpumem"] = resource.MustParse("-1")
	api := fakeAPI(t, b)
	tr.UpsertBudget(b)
	st := tr.Standings("ml", clk.Now())
	if len(st) != 1 {
		t.Fatalf("standings %+v", st)
	}
	problems := strings.Join(st[0].Problems, "\n")
	for _, want := range []string{"example.com/fpga", "nvidia.com/gpumem", "spec.window", "UTC"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems %q do not name %s", problems, want)
		}
	}
	if !strings.Contains(problems, "enforced as 0") {
		t.Errorf("problems %q do not say the negative value is enforced as 0", problems)
	}
	// The negative value fails closed: enforced as a hard of 0, spent (a
	// new pod burning GPU memory is denied), never silently unenforced.
	if len(st[0].Resources) != 2 || st[0].Resources[0].Resource != "nvidia.com/gpu" ||
		st[0].Resources[1].Resource != "nvidia.com/gpumem" || st[0].Resources[1].Hard != 0 {
		t.Errorf("enforced %+v, want nvidia.com/gpu and nvidia.com/gpumem at hard 0", st[0].Resources)
	}
	if d := st[0].WindowEnd.Sub(st[0].WindowStart); d != 24*time.Hour {
		t.Errorf("window of %v, want a UTC day", d)
	}
	NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r", Clock: clk}).CheckpointAll(t.Context())
	_, obj := statusUsed(t, api, b)
	c := meta.FindStatusCondition(obj.Status.Conditions, gpuadmitv1.ConditionBudgetValid)
	if c == nil || c.Status != "False" || !strings.Contains(c.Message, "example.com/fpga") {
		t.Errorf("Valid condition %+v, want False naming the keys", c)
	}
}
