package eval_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// onePod is a pod of one device in namespace NS.
const onePod = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: NS}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]
`

// TestEvalTeams: eval --state decides against the team quotas the state
// holds, as the webhook: the team's usage over its namespaces (a departed
// one included), its object's reservations counted, a namespace outside
// unaffected.
func TestEvalTeams(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := write("full.yaml", fixtures.TeamState("4"))   // 2 + 1 reserved + 1 departed = 4
	roomy := write("roomy.yaml", fixtures.TeamState("5")) // one more fits
	pod := func(ns string) string { return strings.ReplaceAll(onePod, "NS", ns) }
	denied := `GPUClusterQuota \"ml\"`
	for _, tt := range []apptest.Case{
		{Name: "ml-train: the team is full (its reservation and the departed namespace count)", Stdin: pod("ml-train"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantCode: 1, WantTextSub: []string{`"allowed": false`, denied}},
		{Name: "ml-dev (selected by label): full too", Stdin: pod("ml-dev"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantCode: 1, WantTextSub: []string{`"allowed": false`, denied}},
		{Name: "ml-old, departed: still decided against the team", Stdin: pod("ml-old"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantCode: 1, WantTextSub: []string{`"allowed": false`, denied}},
		{Name: "outside: no team, allowed", Stdin: pod("outside"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantTextSub: []string{`"allowed": true`}, NotInText: []string{"GPUClusterQuota"}},
		{Name: "a limit of 5: one more fits", Stdin: pod("ml-train"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", roomy}, WantTextSub: []string{`"allowed": true`}},
		{Name: "a limit of 5, but alice has 2 of her 2 per user (and 1 reserved): denied for her", Stdin: pod("ml-train"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", roomy, "--as", "alice"}, WantCode: 1,
			WantTextSub: []string{`"allowed": false`, `user \"alice\" in GPUClusterQuota \"ml\"`}},
		{Name: "the same for bob, who has nothing charged: allowed", Stdin: pod("ml-train"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", roomy, "--as", "bob"}, WantTextSub: []string{`"allowed": true`}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
