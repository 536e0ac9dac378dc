package audit_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestAuditBudgets: audit lists the budgets near, at or past their limit
// (the team's at 85 % of 3.5 device-hours; the namespace's at 3 of hard),
// and exits 1 only for an overrun one (running pods burned past the
// limit): near or spent is admission doing its job.
func TestAuditBudgets(t *testing.T) {
	write := func(hard string) string {
		state := filepath.Join(t.TempDir(), "state.yaml")
		if err := os.WriteFile(state, []byte(fixtures.BudgetState(time.Now(), hard)), 0o600); err != nil {
			t.Fatal(err)
		}
		return state
	}
	near, overrun := write("100"), write("2")
	for _, tt := range []apptest.Case{
		{Name: "near: listed, exit 0", Args: []string{"audit", "--state", near},
			WantTextSub: []string{"GPU-hour budgets near, at or past their limit:", "GPUClusterBudget ml", "NEAR"},
			NotInText:   []string{"GPUBudget ml-dev/hours"}},
		{Name: "overrun: exit 1", Args: []string{"audit", "--state", overrun}, WantCode: 1,
			WantTextSub: []string{"GPUBudget ml-dev/hours", "OVERRUN"}},
		{Name: "-n outside: no budget", Args: []string{"audit", "--state", overrun, "-n", "outside"},
			NotInText: []string{"budgets"}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
