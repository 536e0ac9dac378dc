package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestAsKubectl: the command line answers as kubectl's does: a mistyped
// command is suggested whatever its flags, bare gpuadmit is its help,
// directories are read wherever a file is, an error names its file and
// document and fails its row alone, a namespace that does not exist is an
// error, and -n against a manifest's own namespace is refused.
func TestAsKubectl(t *testing.T) {
	mixed := t.TempDir()
	copyFile(t, pods+"scenario4-app12.yaml", filepath.Join(mixed, "a-pod.yaml"))
	copyFile(t, "../../../README.md", filepath.Join(mixed, "b-readme.yaml"))
	stateDir := t.TempDir()
	copyFile(t, state+"cluster.yaml", filepath.Join(stateDir, "cluster.yaml"))
	suiteDir := "../../../examples/policy/" // suite.yaml, and README.md and Rego files that are not suites
	badSuites := t.TempDir()
	copyFile(t, pods+"scenario4-app12.yaml", filepath.Join(badSuites, "a-pod.yaml")) // not a suite: not run
	if err := os.WriteFile(filepath.Join(badSuites, "b-suite.yaml"), []byte("apiVersion: gpuadmit.io/v1alpha1\nkind: PolicySuite\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []apptest.Case{
		{Name: "a mistyped command with flags of the command: the suggestion", Args: []string{"efective", "-f", "x"}, WantCode: 2,
			WantErr: "gpuadmit: unknown command \"efective\" for \"gpuadmit\"\n\nDid you mean this?\n\teffective\n\nSee 'gpuadmit --help' for usage.\n"},
		{Name: "after a global flag and its value", Args: []string{"--kubeconfig", "k", "-n", "team-a", "usag", "-A"}, WantCode: 2,
			WantErrSub: "unknown command \"usag\" for \"gpuadmit\"\n\nDid you mean this?\n\tusage\n"},
		{Name: "a mistyped subcommand of policy with its flags", Args: []string{"policy", "tst", "--run", "x"}, WantCode: 2,
			WantErrSub: "gpuadmit policy: unknown command \"tst\" for \"gpuadmit policy\"\n\nDid you mean this?\n\ttest\n"},
		{Name: "bare gpuadmit: the help on stdout, exit 0", Args: nil,
			WantTextSub: []string{"Usage:\n  gpuadmit [flags]\n  gpuadmit [command]", "Available Commands:"}},
		{Name: "-f README.md: not a Kubernetes object, named", Args: []string{"effective", "-f", "../../../README.md"}, WantCode: 2,
			WantErr: "gpuadmit effective: ../../../README.md: not a Kubernetes object (document 1): a text, not an object with apiVersion, kind and metadata (is it a Kubernetes manifest?)\n"},
		{Name: "one bad file of a directory: one failed row, the others printed", Args: []string{"effective", "-f", mixed}, WantCode: 2,
			WantTextSub: []string{"Pod    team-a      small-job   1          1     12288"},
			WantErr:     "gpuadmit effective: " + filepath.Join(mixed, "b-readme.yaml") + ": not a Kubernetes object (document 1): a text, not an object with apiVersion, kind and metadata (is it a Kubernetes manifest?)\n"},
		{Name: "eval: one bad file, one failed row", Args: []string{"eval", "-f", mixed, "--state", state + "cluster.yaml"},
			WantCode: 2, WantTextSub: []string{"Pod    team-a      small-job   true"},
			WantErrSub: "gpuadmit eval: " + filepath.Join(mixed, "b-readme.yaml") + ": not a Kubernetes object (document 1)"},
		{Name: "an invalid pod among the examples: its file, document, namespace and name; the others printed", Args: []string{"effective", "-f", pods},
			WantCode: 2, WantTextSub: []string{"convert-then-serve", "small-job"},
			WantErrSub: "gpuadmit effective: " + pods + "invalid.yaml (document 1): Pod team-a/broken: invalid GPU request"},
		{Name: "--state DIR", Args: []string{"usage", "--state", stateDir, "-n", "team-a", "-o", "jsonpath={.namespaces.team-a.used.gpumem}"},
			WantText: "49152", WantErrSub: "warning: node node-x"},
		{Name: "eval --state DIR", Args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", stateDir, "-o", "jsonpath={.allowed}"},
			WantText: "true"},
		{Name: "policy verify DIR: its suites", Args: []string{"policy", "verify", suiteDir},
			WantTextSub: []string{"PASS  " + suiteDir + "suite.yaml: ", "31 passed, 0 failed\n"}},
		{Name: "policy verify DIR with a suite that cannot be read: a failed row, exit 2", Args: []string{"policy", "verify", badSuites}, WantCode: 2,
			WantTextSub: []string{"FAIL  " + filepath.Join(badSuites, "b-suite.yaml") + ": " + filepath.Join(badSuites, "b-suite.yaml") + ": error unmarshaling JSON", "0 passed, 1 failed\n"}},
		{Name: "policy verify DIR without a suite", Args: []string{"policy", "verify", stateDir}, WantCode: 2,
			WantErrSub: stateDir + ": no policy suite (kind PolicySuite) in the directory"},
		{Name: "audit -n of a namespace not in the state: an error", Args: []string{"audit", "--state", state + "cluster.yaml", "-n", "tema-a"}, WantCode: 2,
			WantErrSub: "gpuadmit audit: namespace \"tema-a\" not found: " + state + "cluster.yaml holds no Namespace, Pod, ResourceQuota or ResourceClaim of it\n\nDid you mean this?\n\tteam-a\n"},
		{Name: "usage -n of a namespace not in the state", Args: []string{"usage", "--state", state + "cluster.yaml", "-n", "nope"}, WantCode: 2,
			WantErrSub: `gpuadmit usage: namespace "nope" not found`},
		{Name: "-n against the manifest's namespace: refused as kubectl", Args: []string{"eval", "-n", "team-b", "-f", pods + "scenario4-app12.yaml", "--state", state + "cluster.yaml"},
			WantCode: 2, WantErrSub: `Pod team-a/small-job: the namespace from the provided object "team-a" does not match the namespace "team-b". You must pass '--namespace=team-a' to perform this operation.`},
		{Name: "-n equal to the manifest's namespace", Args: []string{"eval", "-n", "team-a", "-f", pods + "scenario4-app12.yaml", "--state", state + "cluster.yaml", "-o", "jsonpath={.allowed}"},
			WantText: "true"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

// TestLiveNamespaceNotFound: reading the cluster, a namespace the API
// server says does not exist is an error; one it has is read.
func TestLiveNamespaceNotFound(t *testing.T) {
	kc := fixtures.StartFakeAPI(t, &fixtures.FakeAPI{Namespaces: []string{"team-a"}}, "")
	tests := []apptest.Case{
		{Name: "audit -n of a namespace the cluster lacks", Args: []string{"audit", "--kubeconfig", kc, "-n", "tema-a"}, WantCode: 2,
			WantErrSub: "gpuadmit audit: namespace \"tema-a\" not found in the cluster\n"},
		{Name: "eval of a pod in a namespace the cluster lacks", Args: []string{"eval", "--kubeconfig", kc, "-f", "-"},
			Stdin:    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: tema-a}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n",
			WantCode: 2, WantErrSub: "gpuadmit eval: namespace \"tema-a\" not found in the cluster\n"},
		{Name: "audit -n of one it has", Args: []string{"audit", "--kubeconfig", kc, "-n", "team-a"},
			WantText: "namespace team-a is within its GPU limits\n", WantErrSub: "configuration: the defaults"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOutputRows: --no-headers, -o name and -o custom-columns on the
// commands that print tables, as kubectl's.
func TestOutputRows(t *testing.T) {
	cluster := state + "cluster.yaml"
	warn := "warning: node node-x"
	tests := []apptest.Case{
		{Name: "usage --no-headers", Args: []string{"usage", "--state", cluster, "--no-headers"}, WantErrSub: warn,
			WantText: "team-a   3     3/4   49152/65536   50/300\nteam-b   0     0/0   0/-           0/1\n\n" +
				"node-a   GPU-a1   1     30720/40960   50/100\nnode-a   GPU-a2   1     20480/40960   30/100\nnode-h   GPU-h1   1     8192/16384    0/100\n"},
		{Name: "usage -o name", Args: []string{"usage", "--state", cluster, "-o", "name"}, WantErrSub: warn, WantText: "namespace/team-a\nnamespace/team-b\n"},
		{Name: "usage -o custom-columns, a path with or without braces, <none> for a missing one",
			Args: []string{"usage", "--state", cluster, "-o", "custom-columns=NAME:.name,USED:{.used.gpumem},LIMIT:.limits.gpumem"}, WantErrSub: warn,
			WantText: "NAME     USED    LIMIT\nteam-a   49152   65536\nteam-b   0       <none>\n"},
		{Name: "custom-columns --no-headers", Args: []string{"top", "--state", cluster, "-o", "custom-columns=NAME:.name,PODS:.pods", "--no-headers"}, WantErrSub: warn,
			WantText: "team-a   3\nteam-b   0\n"},
		{Name: "top -o name", Args: []string{"top", "--state", cluster, "-o", "name"}, WantErrSub: warn, WantText: "namespace/team-a\nnamespace/team-b\n"},
		{Name: "audit -o name: the namespaces over a limit", Args: []string{"audit", "--state", cluster, "-o", "name"}, WantErrSub: warn, WantCode: 1},
		{Name: "eval -o name of one pod", Args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", cluster, "-o", "name"}, WantText: "pod/small-job\n"},
		{Name: "effective -o custom-columns of one pod", Args: []string{"effective", "-f", pods + "scenario4-app12.yaml", "-o", "custom-columns=NAME:.name,MEM:.effective.gpumem", "--no-headers"},
			WantText: "small-job   12288\n"},
		{Name: "--no-headers with -o json: refused", Args: []string{"usage", "--state", cluster, "-o", "json", "--no-headers"}, WantCode: 2,
			WantErrSub: "--no-headers is for the tables (-o table, wide, custom-columns), not -o json"},
		{Name: "custom-columns without a path", Args: []string{"usage", "--state", cluster, "-o", "custom-columns=NAME"}, WantCode: 2,
			WantErrSub: `--output custom-columns: "NAME" is not HEADER:PATH`},
		{Name: "one JSON shape: usage's namespaces by name", Args: []string{"usage", "--state", cluster, "-o", "jsonpath={.namespaces.team-a.pods}"}, WantErrSub: warn, WantText: "3"},
		{Name: "one JSON shape: top's namespaces by name", Args: []string{"top", "--state", cluster, "-o", "jsonpath={.namespaces.team-a.pods}"}, WantErrSub: warn, WantText: "3"},
		{Name: "one JSON shape: audit's namespaces by name", Args: []string{"audit", "--state", cluster, "-o", "jsonpath={.namespaces.team-a.over}"}, WantErrSub: warn, WantCode: 1, WantText: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
