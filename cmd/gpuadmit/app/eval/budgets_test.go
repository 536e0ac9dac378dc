package eval_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestEvalBudgets: eval --state decides against the budgets of the state
// as the webhook does, their use computed from the checkpoint and the
// pods' timestamps: a GPU pod in a namespace whose GPUBudget is spent (3
// device-hours used of 2) is denied, naming the budget; with room (3 of
// 10) it is allowed; a pod asking no GPU, and a GPU pod in a namespace no
// budget counts, are not affected.
func TestEvalBudgets(t *testing.T) {
	write := func(name, content string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spent, room := write("spent.yaml", fixtures.BudgetState(time.Now(), "2")), write("room.yaml", fixtures.BudgetState(time.Now(), "100"))
	gpuPod := write("gpu.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: next}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]\n")
	cpuPod := write("cpu.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: cpu}\nspec:\n  containers: [{name: c, resources: {limits: {cpu: 1}}}]\n")
	for _, tt := range []apptest.Case{
		{Name: "spent: denied, naming the budget", Args: []string{"eval", "-f", gpuPod, "--state", spent, "-n", "ml-dev", "-o", "json"},
			WantCode: 1, WantTextSub: []string{`"allowed": false`, `GPUBudget \"hours\"`, "nvidia.com/gpu"}},
		{Name: "room: allowed", Args: []string{"eval", "-f", gpuPod, "--state", room, "-n", "ml-dev", "-o", "json"},
			WantTextSub: []string{`"allowed": true`}, NotInText: []string{`GPUBudget \"hours\" is spent`}},
		{Name: "a pod asking no GPU", Args: []string{"eval", "-f", cpuPod, "--state", spent, "-n", "ml-dev", "-o", "json"},
			WantTextSub: []string{`"allowed": true`}},
		{Name: "a namespace no budget counts", Args: []string{"eval", "-f", gpuPod, "--state", spent, "-n", "outside", "-o", "json"},
			WantTextSub: []string{`"allowed": true`}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
