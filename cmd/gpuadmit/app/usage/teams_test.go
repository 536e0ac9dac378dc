package usage_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestUsageTeams: usage shows each team quota over the namespaces it
// counts (a departed one included, a namespace outside never), with each
// user's devices.
func TestUsageTeams(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(state, []byte(fixtures.TeamState("4")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []apptest.Case{
		{Name: "table", Args: []string{"usage", "--state", state},
			WantTextSub: []string{"TEAM   NAMESPACES               GPU   GPUMEM(MiB)   GPUCORES   USERS",
				"ml     ml-dev,ml-old,ml-train   3/4   3072/-        0/-        alice=2,carol=1"}},
		{Name: "-n outside: no team", Args: []string{"usage", "--state", state, "-n", "outside"}, NotInText: []string{"TEAM"}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
