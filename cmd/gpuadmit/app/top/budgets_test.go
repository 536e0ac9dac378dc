package top_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

func budgetState(t *testing.T, hard string) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(state, []byte(fixtures.BudgetState(time.Now(), hard)), 0o600); err != nil {
		t.Fatal(err)
	}
	return state
}

// topBudgets is what the tests read of top's JSON.
type topBudgets struct {
	Budgets []struct {
		Kind, Namespace, Name, State string
		Resources                    []struct {
			Resource, Hard, State string
			WhatIf                bool
		}
		Pods []struct {
			Namespace, Name, User string
			Burn                  map[string]string
		}
		Users []struct {
			User string
			Pods int
			Burn map[string]string
		}
	}
	OverBudgets  []string
	BudgetWhatIf []struct{ Resource, Value, Actual string }
}

func runTop(t *testing.T, wantCode int, args ...string) topBudgets {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := apptest.Run(append([]string{"top", "-o", "json"}, args...), nil, &out, &errOut); code != wantCode {
		t.Fatalf("exit %d, want %d: %s", code, wantCode, errOut.String())
	}
	var got topBudgets
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return got
}

// TestTopBudgetBurns: each budget lists what each pod and each user
// burned in its window, as the budget counts them: the team's budget
// counts dev (alice, 2 device-hours) and train (bob, 1: it ran an hour
// and ended), never the pending pod nor the pod of a namespace outside.
func TestTopBudgetBurns(t *testing.T) {
	got := runTop(t, 0, "--state", budgetState(t, "10"), "-A")
	team := -1
	for i, b := range got.Budgets {
		if b.Kind == "GPUClusterBudget" && b.Name == "ml" {
			team = i
		}
	}
	if team < 0 {
		t.Fatalf("no GPUClusterBudget ml: %+v", got.Budgets)
	}
	b := got.Budgets[team]
	burns := map[string]string{}
	for _, p := range b.Pods {
		burns[p.Namespace+"/"+p.Name+" "+p.User] = p.Burn["nvidia.com/gpu"]
	}
	want := map[string]string{"ml-dev/dev alice": "2", "ml-train/train bob": "1"}
	if len(burns) != len(want) || burns["ml-dev/dev alice"] != "2" || burns["ml-train/train bob"] != "1" {
		t.Errorf("pods' burn %v, want %v (no pending pod, no pod outside)", burns, want)
	}
	if len(b.Users) != 2 || b.Users[0].User != "alice" || b.Users[0].Burn["nvidia.com/gpu"] != "2" || b.Users[1].User != "bob" {
		t.Errorf("users %+v, want alice (2) then bob (1)", b.Users)
	}
}

// TestTopBudgetWhatIf: a what-if lowering a limit spends the budget (exit
// 1 with --fail-over; the limit marked); one of the window recomputes the
// use over the new window; a what-if of a budget the state lacks, a
// negative limit, a bad window are usage errors naming what is wrong.
func TestTopBudgetWhatIf(t *testing.T) {
	state := budgetState(t, "10")
	got := runTop(t, 1, "--state", state, "-n", "ml-dev", "--what-if", "gb/ml-dev/hours=nvidia.com/gpu=2.5", "--fail-over")
	if len(got.OverBudgets) != 1 || got.OverBudgets[0] != "GPUBudget ml-dev/hours" {
		t.Errorf("over budgets %v, want GPUBudget ml-dev/hours (3 used of 2.5)", got.OverBudgets)
	}
	if len(got.BudgetWhatIf) != 1 || got.BudgetWhatIf[0].Actual != "10" || got.BudgetWhatIf[0].Value != "2.5" {
		t.Errorf("what-ifs %+v", got.BudgetWhatIf)
	}
	for _, b := range got.Budgets {
		if b.Kind == "GPUBudget" && (b.State != "overrun" || !b.Resources[0].WhatIf || b.Resources[0].Hard != "2.5") {
			t.Errorf("GPUBudget with the what-if: %+v", b)
		}
	}
	// Rolling 1h: the folded bucket of 3 hours ago no longer counts, dev's last hour does.
	got = runTop(t, 0, "--state", state, "-n", "ml-dev", "--what-if", "gb/ml-dev/hours=window=1h", "--what-if", "gb/ml-dev/hours=nvidia.com/gpu=1.2")
	for _, b := range got.Budgets {
		if b.Kind == "GPUBudget" && (len(b.Pods) != 1 || b.Pods[0].Burn["nvidia.com/gpu"] != "1" || b.State != "near") {
			t.Errorf("GPUBudget over a rolling hour: %+v, want dev's 1 hour of 1.2 (near: 83 %%)", b)
		}
	}
	for _, tt := range []apptest.Case{
		{Name: "no such budget", Args: []string{"top", "--state", state, "--what-if", "gb/ml-dev/nope=nvidia.com/gpu=1"}, WantCode: 2,
			WantErrSub: "the state has no GPUBudget ml-dev/nope; its budgets are gb/ml-dev/hours, gcb/ml"},
		{Name: "negative", Args: []string{"top", "--state", state, "--what-if", "gcb/ml=nvidia.com/gpu=-1"}, WantCode: 2,
			WantErrSub: "cannot be negative"},
		{Name: "bad window", Args: []string{"top", "--state", state, "--what-if", "gcb/ml=window=Yearly"}, WantCode: 2,
			WantErrSub: `spec.window.calendar: "Yearly" is not one of`},
		{Name: "bad zone", Args: []string{"top", "--state", state, "--what-if", "gcb/ml=window=Monthly,Mars/Olympus"}, WantCode: 2,
			WantErrSub: "spec.window.timeZone"},
		{Name: "twice", Args: []string{"top", "--state", state, "--what-if", "gcb/ml=window=Daily", "--what-if", "gcb/ml=window=Weekly"}, WantCode: 2,
			WantErrSub: "window GPUClusterBudget ml is given twice"},
		{Name: "malformed", Args: []string{"top", "--state", state, "--what-if", "gb/ml-dev=nvidia.com/gpu=1"}, WantCode: 2,
			WantErrSub: "want gb/NAMESPACE/NAME=RESOURCE=HOURS"},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
