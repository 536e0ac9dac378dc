package app_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

func TestAllNamespaces(t *testing.T) {
	cluster := state + "cluster.yaml"
	tests := []apptest.Case{
		{Name: "-A: every namespace", Args: []string{"usage", "--state", cluster, "-A", "-o", "jsonpath={.namespaces.team-a.pods} {.namespaces.team-b.pods}"},
			WantText: "3 0", WantErrSub: "warning: pod team-b/broken"},
		{Name: "-A wins over -n, as in kubectl", Args: []string{"usage", "--state", cluster, "-n", "team-b", "--all-namespaces", "-o", "table"},
			WantTextSub: []string{"team-a      3", "team-b      0"}, WantErrSub: "warning: pod team-b/broken"},
		{Name: "--state without -n: every namespace of the dump", Args: []string{"usage", "--state", cluster},
			WantTextSub: []string{"team-a      3", "team-b      0"}, WantErrSub: "warning: pod team-b/broken"},
		{Name: "eval takes no -A: it decides in the pods' namespaces", Args: []string{"eval", "-A", "-f", "x"}, WantCode: 2,
			WantErrSub: "unknown shorthand flag: 'A' in -A"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

// TestUsageLiveNamespace: reading the cluster, usage shows the kubeconfig
// context's namespace without -n, as kubectl get, and every one with -A.
func TestUsageLiveNamespace(t *testing.T) {
	api := &fixtures.FakeAPI{Namespaces: []string{"team-x"}}
	kc := fixtures.StartFakeAPI(t, api, "team-x")
	noConfig := "gpuadmit usage: configuration: the defaults (no ConfigMap gpuadmit-system/gpuadmit-config; " +
		"is gpuadmit installed in another namespace? --gpuadmit-namespace)\n"
	tests := []apptest.Case{
		{Name: "the context's namespace", Args: []string{"usage", "--kubeconfig", kc, "-o", "json"},
			WantOut:    `{"namespaces":{"team-x":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"pods":0}},"nodes":{}}`,
			WantErrSub: noConfig},
		{Name: "-A", Args: []string{"usage", "--kubeconfig", kc, "-A", "-o", "json"},
			WantOut: `{"namespaces":{},"nodes":{}}`, WantErr: noConfig},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
	if !api.Asked("/api/v1/namespaces/team-x/resourcequotas") || !api.Asked("/api/v1/resourcequotas") {
		t.Errorf("the quotas of team-x, then of every namespace, were not listed: %q", api.Paths)
	}
}

func TestOutputFormats(t *testing.T) {
	pod := pods + "scenario2-init20-app10.yaml"
	tests := []apptest.Case{
		{Name: "effective: a table by default", Args: []string{"effective", "-f", pod},
			WantText: "KIND   NAMESPACE   NAME         REPLICAS   GPU   GPUMEM(MiB)   GPUCORES\n" +
				"Pod    team-a      llm-server   1          1     20480         0\n"},
		{Name: "effective -o table", Args: []string{"effective", "-f", pod, "-o", "table"},
			WantTextSub: []string{"Pod    team-a      llm-server   1          1     20480         0\n"}},
		{Name: "effective -o wide: the containers", Args: []string{"effective", "-f", pod, "-f", "../../../examples/workloads/deployment-4x8g.yaml", "-o", "wide"},
			WantText: "KIND         NAMESPACE   NAME         REPLICAS   GPU   GPUMEM(MiB)   GPUCORES   CONTAINERS\n" +
				"Pod          team-a      llm-server   1          1     20480         0          convert-weights:init,server:app\n" +
				"Deployment   team-a      vllm         4          1     8192          0          server:app\n"},
		{Name: "effective: unresolved memory under the table", Args: []string{"effective", "-f", pods + "percentage.yaml"},
			WantTextSub: []string{"\n\nPod team-a/half-a-gpu unresolved: container \"notebook\": memory is 50% of a device whose size is unknown"}},
		{Name: "effective -o json: the JSON as before", Args: []string{"effective", "-f", "-", "-o", "json"},
			Stdin:    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 100}}}]}\n",
			WantText: "{\n  \"effective\": {\n    \"gpu\": 1,\n    \"gpumem\": 100,\n    \"gpucores\": 0\n  },\n  \"containers\": [\n    {\n      \"name\": \"c\",\n      \"role\": \"app\",\n      \"gpu\": 1,\n      \"gpumem\": 100,\n      \"gpucores\": 0\n    }\n  ],\n  \"unresolved\": []\n}\n"},
		{Name: "effective -o yaml: the JSON as YAML", Args: []string{"effective", "-f", "-", "-o", "yaml"},
			Stdin:    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 100}}}]}\n",
			WantText: "containers:\n- gpu: 1\n  gpucores: 0\n  gpumem: 100\n  name: c\n  role: app\neffective:\n  gpu: 1\n  gpucores: 0\n  gpumem: 100\nunresolved: []\n"},
		{Name: "effective -o jsonpath", Args: []string{"effective", "-f", pod, "-o", "jsonpath={range .containers[*]}{.name}={.gpumem} {end}"},
			WantText: "convert-weights=20480 server=10240 "},
		{Name: "usage -o yaml", Args: []string{"usage", "--state", state + "seed-init-done.yaml", "-o", "yaml"},
			WantTextSub: []string{"namespaces:\n  team-a:\n    limits:\n      gpumem: 24576\n    pods: 1\n", "nodes:\n  node1:\n    devices:\n"}},
		{Name: "usage -o wide: quotas, unresolved pods, free memory and cores",
			Args: []string{"usage", "--state", state + "cluster.yaml", "-o", "wide"},
			WantText: `NAMESPACE   PODS   GPU   GPUMEM(MiB)   GPUCORES   QUOTAS                UNRESOLVED
team-a      3      3/4   49152/65536   50/300     gpu-large,gpu-small   0
team-b      0      0/0   0/-           0/1        no-gpus               0

NODE     DEVICE   GPU   GPUMEM(MiB)   GPUCORES   FREE-GPUMEM(MiB)   FREE-GPUCORES
node-a   GPU-a1   1     30720/40960   50/100     10240              50
node-a   GPU-a2   1     20480/40960   30/100     20480              70
node-h   GPU-h1   1     8192/16384    0/100      8192               100
`, WantErrSub: "warning: pod team-b/broken"},
		{Name: "usage -o jsonpath", Args: []string{"usage", "--state", state + "cluster.yaml", "-n", "team-a", "-o", "jsonpath={.namespaces.team-a.used.gpumem}"},
			WantText: "49152", WantErrSub: "warning: node node-x"},
		{Name: "eval -o wide: the denials and warnings counted", Args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-done.yaml", "-o", "wide"},
			WantTextSub: []string{"KIND   NAMESPACE   NAME        ALLOWED   ADMITTED   GPU   GPUMEM(MiB)   GPUCORES   DENIALS   WARNINGS\n" +
				"Pod    team-a      small-job   true      1/1        1     12288         0          0         1\n"}},
		{Name: "eval -o jsonpath, denied: exit 1", Args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-running.yaml", "-o", "jsonpath={.allowed}"},
			WantCode: 1, WantText: "false"},
		{Name: "eval -o yaml", Args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-done.yaml", "-o", "yaml"},
			WantTextSub: []string{"allowed: true\ndenials: []\neffective:\n  gpu: 1\n"}},
		{Name: "policy schema -o yaml", Args: []string{"policy", "schema", "-o", "yaml"}, WantTextSub: []string{"title: gpuadmit PolicyInput gpuadmit.io/v1alpha1\n"}},
		{Name: "policy schema takes no table", Args: []string{"policy", "schema", "-o", "wide"}, WantCode: 2,
			WantErrSub: `--output "wide" is not a format this command prints: allowed formats are json, yaml, jsonpath=TEMPLATE`},
		{Name: "a jsonpath that does not parse", Args: []string{"usage", "--state", "x", "-o", "jsonpath={.a"}, WantCode: 2,
			WantErrSub: "gpuadmit usage: --output jsonpath={.a: unclosed action"},
		{Name: "jsonpath= without a template", Args: []string{"eval", "-f", "x", "-o", "jsonpath="}, WantCode: 2,
			WantErrSub: "--output jsonpath= needs a template"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

func TestSuggestions(t *testing.T) {
	tests := []apptest.Case{
		{Name: "a command", Args: []string{"usgae"}, WantCode: 2,
			WantErr: "gpuadmit: unknown command \"usgae\" for \"gpuadmit\"\n\nDid you mean this?\n\tusage\n\nSee 'gpuadmit --help' for usage.\n"},
		{Name: "a subcommand", Args: []string{"policy", "verfy", "x"}, WantCode: 2,
			WantErrSub: "gpuadmit policy: unknown command \"verfy\" for \"gpuadmit policy\"\n\nDid you mean this?\n\tverify\n"},
		{Name: "a flag", Args: []string{"usage", "--outptu", "json"}, WantCode: 2,
			WantErr: "gpuadmit usage: unknown flag: --outptu\n\nDid you mean this?\n\t--output\n\nSee 'gpuadmit usage --help' for usage.\n"},
		{Name: "a flag with a value", Args: []string{"eval", "--stat=x"}, WantCode: 2, WantErrSub: "unknown flag: --stat\n\nDid you mean this?\n\t--state\n"},
		{Name: "nothing near", Args: []string{"frobnicate"}, WantCode: 2,
			WantErr: "gpuadmit: unknown command \"frobnicate\" for \"gpuadmit\"\nSee 'gpuadmit --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

func TestVersionJSON(t *testing.T) {
	want, err := json.Marshal(map[string]string{"version": "dev", "commit": "unknown", "buildDate": "unknown",
		"goVersion": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	apptest.Case{Name: "version -o json", Args: []string{"version", "-o", "json"}, WantOut: string(want)}.Check(t)
	apptest.Case{Name: "version -o yaml", Args: []string{"version", "-o", "yaml"}, WantTextSub: []string{"buildDate: unknown\ncommit: unknown\n"}}.Check(t)
	apptest.Case{Name: "version takes no table", Args: []string{"version", "-o", "table"}, WantCode: 2, WantErrSub: "allowed formats are json, yaml"}.Check(t)
}

// TestNoCluster: a live command no cluster answers says, in one line,
// which server it tried and how to point at another or run offline.
func TestNoCluster(t *testing.T) {
	dead := fixtures.Kubeconfig(t, "https://127.0.0.1:1", "")
	hint := "; point at a cluster with --kubeconfig FILE or --context NAME, or run offline on a dump with --state STATE.yaml\n"
	refused := `no cluster answers: the cluster of context "dead" at https://127.0.0.1:1 is not reachable (dial tcp 127.0.0.1:1: connect: connection refused)` + hint
	tests := []apptest.Case{
		{Name: "usage", Args: []string{"usage", "--kubeconfig", dead}, WantCode: 2, WantErr: "gpuadmit usage: " + refused},
		{Name: "usage --config: the read of the state", Args: []string{"usage", "--kubeconfig", dead, "--config", "../../../examples/config/memory-factor-1024.yaml"},
			WantCode: 2, WantErrSub: "\ngpuadmit usage: " + refused},
		{Name: "eval", Args: []string{"eval", "-f", pods + "sidecar.yaml", "--kubeconfig", dead}, WantCode: 2, WantErr: "gpuadmit eval: " + refused},
		{Name: "no such kubeconfig", Args: []string{"usage", "--kubeconfig", "nope.kubeconfig"}, WantCode: 2,
			WantErr: "gpuadmit usage: no --state given, reading the kubeconfig: stat nope.kubeconfig: no such file or directory" + hint},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

// TestConnectionFlagsWhereTheyMatter: the help of a command that reads no
// cluster leaves kubectl's connection flags out.
func TestConnectionFlagsWhereTheyMatter(t *testing.T) {
	tests := []apptest.Case{
		{Name: "usage", Args: []string{"usage", "--help"}, WantTextSub: []string{"--kubeconfig string", "--context string", "-n, --namespace string"}},
		{Name: "eval", Args: []string{"eval", "--help"}, WantTextSub: []string{"--kubeconfig string", "--as-group stringArray"}},
	}
	for _, args := range [][]string{{"effective", "--help"}, {"policy", "verify", "--help"}, {"policy", "test", "-h"},
		{"policy", "schema", "--help"}, {"version", "--help"}, {"completion", "bash", "--help"}, {"help", "effective"}} {
		tests = append(tests, apptest.Case{Name: strings.Join(args, " "), Args: args,
			WantTextSub: []string{"Usage:"}, NotInText: []string{"--kubeconfig", "--context", "--namespace", "Global Flags"}})
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

// TestNamespaceCompletion: -n completes the live cluster's namespaces,
// and nothing, silently, when no cluster answers.
func TestNamespaceCompletion(t *testing.T) {
	kc := fixtures.StartFakeAPI(t, &fixtures.FakeAPI{Namespaces: []string{"team-b", "team-a", "default"}}, "")
	tests := []apptest.Case{
		{Name: "the cluster's namespaces", Args: []string{"__complete", "usage", "--kubeconfig", kc, "-n", "team"},
			WantText: "team-a\nteam-b\n:4\n", WantErrSub: "Completion ended with directive: ShellCompDirectiveNoFileComp"},
		{Name: "no cluster", Args: []string{"__complete", "eval", "--kubeconfig", fixtures.Kubeconfig(t, "https://127.0.0.1:1", ""), "-n", ""},
			WantText: ":4\n", WantErrSub: "Completion ended with directive: ShellCompDirectiveNoFileComp"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

func TestWrongFileKinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	suite := "../../../examples/policy/suite.yaml"
	cfg := write("cfg.yaml", "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\n")
	tests := []apptest.Case{
		{Name: "policy verify of a Pod", Args: []string{"policy", "verify", pods + "sidecar.yaml"}, WantCode: 2,
			WantErr: "gpuadmit policy verify: " + pods + "sidecar.yaml is a Pod manifest, not a policy suite (kind PolicySuite, apiVersion gpuadmit.io/v1alpha1; docs/policy-verify.md)\n"},
		{Name: "policy verify of a dump", Args: []string{"policy", "verify", state + "cluster.yaml"}, WantCode: 2,
			WantErrSub: "cluster.yaml is a List, Node, ResourceQuota, Pod, Namespace manifest, not a policy suite"},
		{Name: "eval -f of a suite", Args: []string{"eval", "-f", suite, "--state", state + "cluster.yaml"}, WantCode: 2,
			WantErrSub: "gpuadmit eval: " + suite + ": no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found; " +
				suite + " is a policy suite (kind PolicySuite): run it with 'gpuadmit policy verify " + suite + "'\n"},
		{Name: "effective -f of a suite on standard input", Args: []string{"effective", "-f", "-"}, Stdin: "apiVersion: gpuadmit.io/v1alpha1\nkind: PolicySuite\n",
			WantCode: 2, WantErrSub: "; - is a policy suite (kind PolicySuite): run it with 'gpuadmit policy verify -'"},
		{Name: "effective -f of a configuration", Args: []string{"effective", "-f", cfg}, WantCode: 2,
			WantErrSub: "or ResourceClaim found; they hold only Configuration\n"},
		{Name: "--state of a suite", Args: []string{"usage", "--state", suite}, WantCode: 2,
			WantErrSub: "(1 other objects); " + suite + " is a policy suite (kind PolicySuite)"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

// TestProgressOnTerminal: a live read held in flight past the delay tells
// its progress on stderr when stderr is a terminal, and says nothing (no
// timer armed) elsewhere.
func TestProgressOnTerminal(t *testing.T) {
	for _, tty := range []bool{true, false} {
		listing, release := make(chan struct{}, 1), make(chan struct{})
		kc := fixtures.StartFakeAPI(t, &fixtures.FakeAPI{Namespaces: []string{"team-x"}, ListingPods: listing, Release: release}, "team-x")
		clk := clocktesting.NewFakeClock(time.Unix(0, 0))
		var out fixtures.SyncBuffer
		errOut := fixtures.SyncBuffer{Lines: make(chan string, 64)}
		c := cmdline.New(strings.NewReader(""), &out, &errOut)
		c.TTY = func(io.Writer) bool { return tty }
		c.Clock, c.ProgressAfter, c.ProgressEvery = clk, 2*time.Second, time.Hour
		done := make(chan int)
		go func() { done <- app.Execute(t.Context(), c, "gpuadmit", []string{"usage", "--kubeconfig", kc, "-A"}) }()
		<-listing // the pod list is in flight, the progress started
		if clk.HasWaiters() != tty {
			t.Errorf("terminal %v: a progress timer armed: %v", tty, clk.HasWaiters())
		}
		clk.Step(2 * time.Second)
		if tty {
			if got := errOut.NextProgress(t); got != "reading the cluster: 0 pods listed...\n" {
				t.Errorf("terminal: stderr %q", got)
			}
		}
		close(release)
		if code := <-done; code != 0 {
			t.Fatalf("terminal %v: exit code %d; stderr %q", tty, code, errOut.String())
		}
		if got := strings.Contains(errOut.String(), "reading the cluster"); got != tty {
			t.Errorf("terminal %v: stderr %q", tty, errOut.String())
		}
	}
}

// TestPolicyReportFormats: policy verify and policy test print their
// reports as text by default, and as data with -o (verify: the cases and
// totals; test: OPA's JSON test report, as 'opa test --format=json').
func TestPolicyReportFormats(t *testing.T) {
	suite := "../../../examples/policy/suite.yaml"
	tests := []apptest.Case{
		{Name: "verify -o jsonpath totals", Args: []string{"policy", "verify", suite, "-o", "jsonpath={.failed} failed, {.cases[0].name}"},
			WantText: "0 failed, required-labels/denied without a cost-center label"},
		{Name: "verify -o yaml", Args: []string{"policy", "verify", suite, "-o", "yaml"},
			WantTextSub: []string{"cases:\n- name: required-labels/denied without a cost-center label\n  passed: true\n", "failed: 0\n"}},
		{Name: "verify text unchanged", Args: []string{"policy", "verify", suite},
			WantTextSub: []string{"PASS  required-labels/denied without a cost-center label\n", " passed, 0 failed\n"}},
		{Name: "test -o jsonpath", Args: []string{"policy", "test", "-o", "jsonpath={[0].package}"}, WantText: "data.gpuadmit.builtin_test"},
		{Name: "test --coverage -o json refused", Args: []string{"policy", "test", "--coverage", "-o", "json"}, WantCode: 2,
			WantErrSub: "--coverage reports in text: use it without -o"},
		{Name: "verify -o wide refused", Args: []string{"policy", "verify", suite, "-o", "wide"}, WantCode: 2,
			WantErrSub: "allowed formats are json, yaml, jsonpath=TEMPLATE"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
