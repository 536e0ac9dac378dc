package audit

import (
	"fmt"
	"io"
	"slices"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/view"
)

// budgets adds the budgets counting the namespaces checked that are near
// their limit, spent or overrun, or have keys not enforced.
func (a *auditOutput) budgets(bs []view.Budget) {
	for _, b := range bs {
		if b.State != view.BudgetOK || len(b.Problems) > 0 {
			a.Budgets = append(a.Budgets, b)
		}
	}
}

// budgetsFail reports whether a budget is overrun (running pods burned
// past its limit) or has a key not enforced: audit's exit 1. A spent
// budget or one near its limit is listed, but is admission doing its job.
func (a auditOutput) budgetsFail() bool {
	return slices.ContainsFunc(a.Budgets, func(b view.Budget) bool { return b.State == view.BudgetOverrun || len(b.Problems) > 0 })
}

// printBudgets writes the budgets near, at or past their limit.
func printBudgets(w io.Writer, a auditOutput) error {
	if len(a.Budgets) == 0 {
		return nil
	}
	fmt.Fprint(w, "\nGPU-hour budgets near, at or past their limit:")
	return view.PrintBudgets(w, a.Budgets)
}
