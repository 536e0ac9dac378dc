package audit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestAuditTeams: a team over its limit (its reservation and a departed
// namespace counted) or a user over the per-user limit makes audit list
// it and exit 1, though no namespace is over its own quotas.
func TestAuditTeams(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	over := write("over.yaml", fixtures.TeamState("3"))
	for _, tt := range []apptest.Case{
		{Name: "the team and alice over", Args: []string{"audit", "--state", over}, WantCode: 1,
			WantTextSub: []string{"no namespace is over its GPU limits", "GPUClusterQuota limits passed:",
				"ml      -       limits.nvidia.com/gpu   3      1          3", "ml      alice   limits.nvidia.com/gpu   2      1          2"}},
		{Name: "-o json", Args: []string{"audit", "--state", over, "-o", "json"}, WantCode: 1,
			WantTextSub: []string{`"teamOver": [`, `"quota": "ml"`, `"user": "alice"`}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
