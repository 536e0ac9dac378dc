package eval_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// sharedClaim is a standalone ResourceClaim of one whole GPU in ml-dev,
// as a state file's item.
const sharedClaim = `- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: shared, namespace: ml-dev, uid: shared}
  spec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, count: 1}}]}}
`

// TestEvalPodNamingAClaimUnderASpentBudget attacks the command line's
// verdict on a pod that asks no GPU itself but names an existing claim:
// it makes the claim burn, so with the budget spent it is denied, as the
// webhook denies it.
func TestEvalPodNamingAClaimUnderASpentBudget(t *testing.T) {
	write := func(name, content string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spent := write("spent.yaml", fixtures.BudgetState(time.Now(), "2")+sharedClaim)
	room := write("room.yaml", fixtures.BudgetState(time.Now(), "100")+sharedClaim)
	pod := write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: next}\nspec:\n  resourceClaims: [{name: g, resourceClaimName: shared}]\n"+
		"  containers: [{name: c, resources: {limits: {cpu: 1}, claims: [{name: g}]}}]\n")
	for _, tt := range []apptest.Case{
		{Name: "spent: denied, naming the budget", Args: []string{"eval", "-f", pod, "--state", spent, "-n", "ml-dev", "-o", "json"},
			WantCode: 1, WantTextSub: []string{`"allowed": false`, `GPUBudget \"hours\" is spent`, "nvidia.com/gpu"}},
		{Name: "room: allowed", Args: []string{"eval", "-f", pod, "--state", room, "-n", "ml-dev", "-o", "json"},
			WantTextSub: []string{`"allowed": true`}, NotInText: []string{`is spent`}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
