package top_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestTopTeams: top shows each team quota over the namespaces it counts
// (a departed one marked), its reservations counted, each user's part
// against the per-user limit, and --fail-over exits 1 for a team over
// its limit though no namespace is.
func TestTopTeams(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(state, []byte(fixtures.TeamState("3")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []apptest.Case{
		{Name: "table: the team row and its users", Args: []string{"top", "--state", state},
			WantTextSub: []string{
				"TEAM   NAMESPACES                          GPU     GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER",
				"ml     ml-dev,ml-old(departing),ml-train   3+1/3   133%   3072+1024/-   -         0/-        -           nvidia.com/gpu",
				"TEAM   USER    GPU     GPU%",
				"ml     alice   2+1/2   150%   2048+1024/-   -         0/-        -           nvidia.com/gpu",
				"ml     carol   1/2     50%"},
			NotInText: []string{"outside(", "ml     outside"}},
		{Name: "--fail-over: the team is over (3 used + 1 reserved of 3)", Args: []string{"top", "--state", state, "--fail-over", "-o", "json"},
			WantCode: 1, WantTextSub: []string{`"overTeams": [`, `"departing": [`}},
		{Name: "--what-if on the team quota: 8 devices, the team within, alice still over her 2", Args: []string{"top", "--state", state, "-n", "ml-dev",
			"--what-if", "gcq/ml=nvidia.com/gpu=8", "--fail-over"}, WantCode: 1,
			WantTextSub: []string{"ml     ml-dev,ml-old(departing),ml-train   3+1/8   50%", "ml     alice   2+1/2   150%",
				"what-if: GPUClusterQuota ml, nvidia.com/gpu: limit 8 instead of 3"}},
		{Name: "--what-if on a team quota not shown", Args: []string{"top", "--state", state, "--what-if", "gcq/nope=nvidia.com/gpu=8"},
			WantCode: 2, WantErrSub: "GPUClusterQuota nope does not count a namespace shown; the team quotas shown are ml"},
		{Name: "-n outside: no team counts it", Args: []string{"top", "--state", state, "-n", "outside"},
			NotInText: []string{"TEAM"}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
