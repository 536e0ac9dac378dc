package top

import (
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/view"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
)

// The prefixes of a --what-if of a budget: gb/NAMESPACE/NAME (GPUBudget)
// and gcb/NAME (GPUClusterBudget).
const (
	budgetPrefix        = "gb/"
	clusterBudgetPrefix = "gcb/"
	// windowKey is the RESOURCE of a what-if of a budget's window.
	windowKey = "window"
)

const budgetWhatIfExample = "want gb/NAMESPACE/NAME=RESOURCE=HOURS or gcb/NAME=RESOURCE=HOURS (a limit in resource-hours), " +
	"or gb/NAMESPACE/NAME=window=WINDOW with WINDOW Monthly, Weekly or Daily (in UTC, or Monthly,Europe/Berlin) or a rolling duration (720h)"

// budgetWhatIf is one --what-if of a budget: a limit or the window
// replaced, for the evaluation only.
type budgetWhatIf struct {
	arg                 string
	kind, namespace     string
	name, resource, val string
	hours               resource.Quantity
	window              gpuadmitv1.BudgetWindow
}

// budgetWhatIfShown is a budget's --what-if as top's JSON shows it.
type budgetWhatIfShown struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Resource  string `json:"resource"`
	Value     string `json:"value"`
	// Actual is the value it replaced ("" : none).
	Actual string `json:"actual,omitempty"`
}

// splitBudgetWhatIfs parses the --what-ifs of budgets and returns the
// others (a namespace's or a team quota's) as they are.
func splitBudgetWhatIfs(args []string) ([]budgetWhatIf, []string, error) {
	var bws []budgetWhatIf
	var rest []string
	for _, arg := range args {
		if !strings.HasPrefix(arg, budgetPrefix) && !strings.HasPrefix(arg, clusterBudgetPrefix) {
			rest = append(rest, arg)
			continue
		}
		w, err := parseBudgetWhatIf(arg)
		if err != nil {
			return nil, nil, cmdline.UsageErrorf("--what-if %q: %w", arg, err)
		}
		for _, o := range bws {
			if o.kind == w.kind && o.namespace == w.namespace && o.name == w.name && o.resource == w.resource {
				return nil, nil, cmdline.UsageErrorf("--what-if %q: %s %s is given twice", arg, w.resource, w.who())
			}
		}
		bws = append(bws, w)
	}
	return bws, rest, nil
}

func parseBudgetWhatIf(arg string) (budgetWhatIf, error) {
	parts := strings.SplitN(arg, "=", 3)
	if len(parts) < 3 || parts[1] == "" || parts[2] == "" {
		return budgetWhatIf{}, fmt.Errorf("%s", budgetWhatIfExample)
	}
	w := budgetWhatIf{arg: arg, resource: parts[1], val: parts[2]}
	if rest, ok := strings.CutPrefix(parts[0], budgetPrefix); ok {
		ns, name, found := strings.Cut(rest, "/")
		if !found || ns == "" || name == "" {
			return budgetWhatIf{}, fmt.Errorf("%s", budgetWhatIfExample)
		}
		w.kind, w.namespace, w.name = "GPUBudget", ns, name
	} else {
		w.kind, w.name = "GPUClusterBudget", strings.TrimPrefix(parts[0], clusterBudgetPrefix)
	}
	if w.resource == windowKey {
		return w, w.parseWindow()
	}
	q, err := resource.ParseQuantity(w.val)
	if err != nil {
		return budgetWhatIf{}, fmt.Errorf("%s %q: %w", w.resource, w.val, err)
	}
	if _, err := burn.HoursToAmount(q); err != nil {
		return budgetWhatIf{}, err
	}
	w.hours = q
	return w, nil
}

// parseWindow reads the value of a window's what-if.
func (w *budgetWhatIf) parseWindow() error {
	if d, err := time.ParseDuration(w.val); err == nil {
		if _, err := burn.ParseWindow("", "", d); err != nil {
			return err
		}
		w.window = gpuadmitv1.BudgetWindow{Rolling: &metav1.Duration{Duration: d}}
		return nil
	}
	cal, zone, _ := strings.Cut(w.val, ",")
	if _, err := burn.ParseWindow(cal, zone, 0); err != nil {
		return err
	}
	w.window = gpuadmitv1.BudgetWindow{Calendar: cal, TimeZone: zone}
	return nil
}

func (w budgetWhatIf) who() string {
	if w.kind == "GPUBudget" {
		return fmt.Sprintf("GPUBudget %s/%s", w.namespace, w.name)
	}
	return "GPUClusterBudget " + w.name
}

// applyBudgetWhatIfs changes the budgets of the view as ws say (the
// view's tracking is rebuilt) and returns what each replaced.
func applyBudgetWhatIfs(v *view.View, ws []budgetWhatIf) ([]budgetWhatIfShown, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	var shown []budgetWhatIfShown
	err := v.WhatIfBudgets(func(bs *clusterstate.Budgets) error {
		for _, w := range ws {
			spec, err := w.find(bs)
			if err != nil {
				return err
			}
			sh := budgetWhatIfShown{Kind: w.kind, Namespace: w.namespace, Name: w.name, Resource: w.resource, Value: w.val}
			if w.resource == windowKey {
				sh.Actual = describe(*spec.window)
				*spec.window = w.window
			} else {
				if old, ok := (*spec.hard)[corev1.ResourceName(w.resource)]; ok {
					sh.Actual = old.String()
					if a, err := burn.HoursToAmount(old); err == nil {
						sh.Actual = burn.AmountToHours(a)
					}
				}
				if *spec.hard == nil {
					*spec.hard = corev1.ResourceList{}
				}
				(*spec.hard)[corev1.ResourceName(w.resource)] = w.hours
			}
			shown = append(shown, sh)
		}
		return nil
	})
	return shown, err
}

// budgetSpec points at the parts of a budget's spec a what-if changes.
type budgetSpec struct {
	window *gpuadmitv1.BudgetWindow
	hard   *corev1.ResourceList
}

// find is w's budget among bs.
func (w budgetWhatIf) find(bs *clusterstate.Budgets) (budgetSpec, error) {
	var names []string
	for _, b := range bs.Namespaced {
		if w.kind == "GPUBudget" && b.Namespace == w.namespace && b.Name == w.name {
			return budgetSpec{window: &b.Spec.Window, hard: &b.Spec.Hard}, nil
		}
		names = append(names, "gb/"+b.Namespace+"/"+b.Name)
	}
	for _, b := range bs.Cluster {
		if w.kind == "GPUClusterBudget" && b.Name == w.name {
			return budgetSpec{window: &b.Spec.Window, hard: &b.Spec.Hard}, nil
		}
		names = append(names, "gcb/"+b.Name)
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	return budgetSpec{}, cmdline.UsageErrorf("--what-if %q: the state has no %s; its budgets are %s", w.arg, w.who(), strings.Join(names, ", "))
}

// describe is a window as a what-if writes it.
func describe(w gpuadmitv1.BudgetWindow) string {
	if w.Rolling != nil {
		return w.Rolling.Duration.String()
	}
	if w.TimeZone != "" {
		return w.Calendar + "," + w.TimeZone
	}
	return w.Calendar
}

// markWhatIfs marks the limits of bs a what-if replaced.
func markWhatIfs(bs []view.Budget, ws []budgetWhatIf) {
	for _, w := range ws {
		for i := range bs {
			if bs[i].Kind != w.kind || bs[i].Namespace != w.namespace || bs[i].Name != w.name {
				continue
			}
			for j := range bs[i].Resources {
				if bs[i].Resources[j].Resource == w.resource {
					bs[i].Resources[j].WhatIf = true
				}
			}
		}
	}
}

// printBudgetBurns writes the budgets, then a row per pod and a row per
// user of each budget: what each burned of each limited resource.
func printBudgetBurns(w io.Writer, bs []view.Budget) error {
	if err := view.PrintBudgets(w, bs); err != nil {
		return err
	}
	pods := false
	for _, b := range bs {
		pods = pods || len(b.Pods) > 0
	}
	if !pods {
		return nil
	}
	fmt.Fprintln(w)
	t := output.NewTable(w)
	fmt.Fprintln(t, "BUDGET\tPOD\tUSER\tRESOURCE\tBURN(h)")
	for _, b := range bs {
		for _, p := range b.Pods {
			name := p.Namespace + "/" + p.Name
			if p.Deleted {
				name += "(deleted)"
			}
			for _, r := range b.Resources {
				if v, ok := p.Burn[r.Resource]; ok {
					fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", b.Key(), name, output.OrDash(p.User), r.Resource, v)
				}
			}
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = output.NewTable(w)
	fmt.Fprintln(t, "BUDGET\tUSER\tPODS\tRESOURCE\tBURN(h)\t%")
	for _, b := range bs {
		for _, u := range b.Users {
			for _, r := range b.Resources {
				if v, ok := u.BurnUnitMs[r.Resource]; ok {
					fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%s\t%d\n", b.Key(), output.OrDash(u.User), u.Pods, r.Resource, u.Burn[r.Resource],
						int64(percentOfHard(v, r.HardUnitMs)))
				}
			}
		}
	}
	return t.Flush()
}

// percentOfHard is v in percent of hard (floored; 100 for a limit of 0).
func percentOfHard(v, hard int64) float64 {
	if hard <= 0 {
		return 100
	}
	return float64(v) * 100 / float64(hard)
}

// budgets adds the budgets counting the namespaces shown at now, the
// what-ifs ws applied, with each pod's and user's burn.
func (t *topOutput) budgets(v *view.View, ws []budgetWhatIf, now time.Time) error {
	shown, err := applyBudgetWhatIfs(v, ws)
	if err != nil {
		return err
	}
	t.BudgetWhatIf = shown
	t.Budgets = v.Budgets(now)
	markWhatIfs(t.Budgets, ws)
	v.WithBurns(t.Budgets, now)
	for _, b := range t.Budgets {
		if b.State == view.BudgetSpent || b.State == view.BudgetOverrun {
			t.OverBudgets = append(t.OverBudgets, b.Key())
		}
	}
	return nil
}

// budgetWhatIfNotes say what each budget's what-if replaced.
func budgetWhatIfNotes(ws []budgetWhatIfShown) []string {
	var out []string
	for _, w := range ws {
		who := w.Kind + " " + w.Name
		if w.Namespace != "" {
			who = w.Kind + " " + w.Namespace + "/" + w.Name
		}
		out = append(out, fmt.Sprintf("what-if: %s %s %s (actual: %s)", who, w.Resource, w.Value, output.OrDash(w.Actual)))
	}
	return out
}
