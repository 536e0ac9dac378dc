package metrics_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// budgetSeries are the labels of the budget of setUpBudgets.
const budgetSeries = "kind=GPUBudget,name=hours,namespace=m-a,resource=nvidia.com/gpu"

// setUpBudgets gives namespace m-a a GPUBudget of 1 device-hour over a
// rolling 8784 hours and makes its pod a1 run (as the kubelet writes it),
// so that the budget gauges have samples, its projected exhaustion too
// (1 device-hour at the burn of a pod that has run a second or more is
// within the window).
func setUpBudgets(t *testing.T, c *local.Cluster) {
	t.Helper()
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	b := &gpuadmitv1.GPUBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "m-a", Name: "hours"},
		Spec: gpuadmitv1.GPUBudgetSpec{Window: gpuadmitv1.BudgetWindow{Rolling: &metav1.Duration{Duration: 8784 * time.Hour}},
			Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}
	if err := cl.Create(t.Context(), b); err != nil {
		t.Fatalf("creating GPUBudget m-a/hours: %v", err)
	}
	if err := c.InitsDone(t.Context(), "m-a", "a1"); err != nil {
		t.Fatal(err)
	}
}

// checkBudgets: the budget gauges of every replica's tracker: the limit in
// device-hours, a use above 0 and never above the time since the pod was
// made to run (one device; its startedAt is written to the second), a
// burn rate, and a projected exhaustion within the window.
func checkBudgets(t *testing.T, url, token string, started time.Time) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams := scrape(t, url, token)
		hard := fams["gpuadmit_budget_hard_hours"].series[budgetSeries]
		used, usedOK := fams["gpuadmit_budget_used_hours"].series[budgetSeries]
		rate := fams["gpuadmit_budget_burn_rate_hours"].series[budgetSeries]
		_, exhausts := fams["gpuadmit_budget_projected_exhaustion_timestamp_seconds"].series[budgetSeries]
		bound := time.Since(started.Truncate(time.Second)).Hours() // startedAt is written to the second
		var problems []string
		if hard != 1 {
			problems = append(problems, "hard is not 1 device-hour")
		}
		if !usedOK || used <= 0 || used > bound {
			problems = append(problems, "used is not above 0 and under the time since the pod started")
		}
		if rate <= 0 || !exhausts {
			problems = append(problems, "no burn rate or no projected exhaustion")
		}
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the budget's gauges after 10s (hard %v, used %v, rate %v, bound %v): %s", hard, used, rate, bound, strings.Join(problems, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
