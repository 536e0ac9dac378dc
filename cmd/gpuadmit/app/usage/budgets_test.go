package usage_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

const hourMs = 3_600_000

// budgetStateFile writes fixtures.BudgetState at now with the GPUBudget's
// limit hard.
func budgetStateFile(t *testing.T, now time.Time, hard string) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(state, []byte(fixtures.BudgetState(now, hard)), 0o600); err != nil {
		t.Fatal(err)
	}
	return state
}

// shownBudget is what the test reads of a budget in usage's JSON.
type shownBudget struct {
	Kind, Namespace, Name, State string
	Namespaces                   []string
	Resources                    []struct {
		Resource, Used, Hard, State string
		UsedUnitMs                  int64 `json:"usedUnitMilliseconds"`
		Percent                     int64
	}
}

// TestUsageBudgets: usage shows each budget counting the namespaces shown,
// its use computed as the webhook computes it: the checkpoint's folded
// burn (a pod since deleted) plus each counted pod's burn from its own
// timestamps (running: to now; succeeded: to its end; pending: nothing);
// never below that recount, and above it by no more than the time the
// command took; a pod of a namespace no budget selects counts in none.
func TestUsageBudgets(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	state := budgetStateFile(t, start, "10")
	var out, errOut bytes.Buffer
	if code := apptest.Run([]string{"usage", "--state", state, "-o", "json"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	slack := time.Since(start).Milliseconds() + 1000 // the command's time, the timestamps' second
	var got struct{ Budgets []shownBudget }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	type want struct {
		key, resource, state string
		used                 int64 // unit-ms at start: the recount from the pods' timestamps
		percent              int64
	}
	wants := []want{
		// 1 folded device-hour + dev's 2 running hours, of 10
		{"GPUBudget ml-dev/hours", "nvidia.com/gpu", "ok", 3 * hourMs, 30},
		// dev's 2 hours + train's 1 (succeeded), of 3.5: near (80 %)
		{"GPUClusterBudget /ml", "nvidia.com/gpu", "near", 3 * hourMs, 85},
		// dev's 1024 MiB for 2 hours + train's 2048 for 1
		{"GPUClusterBudget /ml", "nvidia.com/gpumem", "ok", 4096 * hourMs, 0},
	}
	if len(got.Budgets) != 2 {
		t.Fatalf("budgets %+v, want GPUBudget ml-dev/hours and GPUClusterBudget ml", got.Budgets)
	}
	for _, w := range wants {
		found := false
		for _, b := range got.Budgets {
			if b.Kind+" "+b.Namespace+"/"+b.Name != w.key {
				continue
			}
			for _, r := range b.Resources {
				if r.Resource != w.resource {
					continue
				}
				found = true
				perUnit := w.used / (3 * hourMs) // the devices, MiB burning at once, at most 4096
				if r.UsedUnitMs < w.used || r.UsedUnitMs > w.used+slack*perUnit*2 {
					t.Errorf("%s %s: used %d unit-ms, want the recount %d (+ at most the command's %d ms)", w.key, w.resource, r.UsedUnitMs, w.used, slack)
				}
				if r.State != w.state || r.Percent != w.percent {
					t.Errorf("%s %s: %s at %d %%, want %s at %d %%", w.key, w.resource, r.State, r.Percent, w.state, w.percent)
				}
			}
		}
		if !found {
			t.Errorf("no %s %s in %s", w.key, w.resource, out.String())
		}
	}
	for _, b := range got.Budgets {
		if b.Kind == "GPUClusterBudget" && strings.Join(b.Namespaces, ",") != "ml-dev,ml-train" {
			t.Errorf("GPUClusterBudget ml selects %v, want ml-dev (label) and ml-train (named)", b.Namespaces)
		}
	}
}

// TestUsageBudgetsTable: the table's budget rows, and none for a
// namespace no budget counts.
func TestUsageBudgetsTable(t *testing.T) {
	state := budgetStateFile(t, time.Now(), "10")
	for _, tt := range []apptest.Case{
		{Name: "table", Args: []string{"usage", "--state", state},
			WantTextSub: []string{"BUDGET", "GPUBudget ml-dev/hours   rolling 720h0m0s", "GPUClusterBudget ml      Monthly UTC",
				"NEAR", "OK"}},
		{Name: "-n outside: no budget", Args: []string{"usage", "--state", state, "-n", "outside"}, NotInText: []string{"BUDGET"}},
		{Name: "-n ml-train: the team's budget only", Args: []string{"usage", "--state", state, "-n", "ml-train"},
			WantTextSub: []string{"GPUClusterBudget ml"}, NotInText: []string{"GPUBudget ml-dev/hours"}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
