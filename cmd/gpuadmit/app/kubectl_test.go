package app

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// The command line behaves like kubectl: -A, -o yaml|wide|jsonpath, typo
// suggestions, version -o json, the line saying no cluster answers, the
// connection flags only where they matter, and files of the wrong kind
// named as such.

func TestAllNamespaces(t *testing.T) {
	cluster := state + "cluster.yaml"
	tests := []cliCase{
		{name: "-A: every namespace", args: []string{"usage", "--state", cluster, "-A", "-o", "jsonpath={.namespaces.team-a.pods} {.namespaces.team-b.pods}"},
			wantText: "3 0", wantErrSub: "warning: pod team-b/broken"},
		{name: "-A wins over -n, as in kubectl", args: []string{"usage", "--state", cluster, "-n", "team-b", "--all-namespaces", "-o", "table"},
			wantTextSub: []string{"team-a      3", "team-b      0"}, wantErrSub: "warning: pod team-b/broken"},
		{name: "--state without -n: every namespace of the dump", args: []string{"usage", "--state", cluster},
			wantTextSub: []string{"team-a      3", "team-b      0"}, wantErrSub: "warning: pod team-b/broken"},
		{name: "eval takes no -A: it decides in the pods' namespaces", args: []string{"eval", "-A", "-f", "x"}, wantCode: 2,
			wantErrSub: "unknown shorthand flag: 'A' in -A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestUsageLiveNamespace: reading the cluster, usage shows the kubeconfig
// context's namespace without -n, as kubectl get, and every one with -A.
func TestUsageLiveNamespace(t *testing.T) {
	api := &fakeAPI{}
	kc := startFakeAPI(t, api, "team-x")
	noConfig := "gpuadmit usage: configuration: the defaults (no ConfigMap gpuadmit-system/gpuadmit-config; " +
		"is gpuadmit installed in another namespace? --gpuadmit-namespace)\n"
	tests := []cliCase{
		{name: "the context's namespace", args: []string{"usage", "--kubeconfig", kc, "-o", "json"},
			wantOut:    `{"namespaces":{"team-x":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"pods":0}},"nodes":{}}`,
			wantErrSub: noConfig},
		{name: "-A", args: []string{"usage", "--kubeconfig", kc, "-A", "-o", "json"},
			wantOut: `{"namespaces":{},"nodes":{}}`, wantErr: noConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
	if !api.asked("/api/v1/namespaces/team-x/resourcequotas") || !api.asked("/api/v1/resourcequotas") {
		t.Errorf("the quotas of team-x, then of every namespace, were not listed: %q", api.paths)
	}
}

func TestOutputFormats(t *testing.T) {
	pod := pods + "scenario2-init20-app10.yaml"
	tests := []cliCase{
		{name: "effective: a table by default", args: []string{"effective", "-f", pod},
			wantText: "KIND   NAMESPACE   NAME         REPLICAS   GPU   GPUMEM(MiB)   GPUCORES\n" +
				"Pod    team-a      llm-server   1          1     20480         0\n"},
		{name: "effective -o table", args: []string{"effective", "-f", pod, "-o", "table"},
			wantTextSub: []string{"Pod    team-a      llm-server   1          1     20480         0\n"}},
		{name: "effective -o wide: the containers", args: []string{"effective", "-f", pod, "-f", "../../../examples/workloads/deployment-4x8g.yaml", "-o", "wide"},
			wantText: "KIND         NAMESPACE   NAME         REPLICAS   GPU   GPUMEM(MiB)   GPUCORES   CONTAINERS\n" +
				"Pod          team-a      llm-server   1          1     20480         0          convert-weights:init,server:app\n" +
				"Deployment   team-a      vllm         4          1     8192          0          server:app\n"},
		{name: "effective: unresolved memory under the table", args: []string{"effective", "-f", pods + "percentage.yaml"},
			wantTextSub: []string{"\n\nPod team-a/half-a-gpu unresolved: container \"notebook\": memory is 50% of a device whose size is unknown"}},
		{name: "effective -o json: the JSON as before", args: []string{"effective", "-f", "-", "-o", "json"},
			stdin:    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 100}}}]}\n",
			wantText: "{\n  \"effective\": {\n    \"gpu\": 1,\n    \"gpumem\": 100,\n    \"gpucores\": 0\n  },\n  \"containers\": [\n    {\n      \"name\": \"c\",\n      \"role\": \"app\",\n      \"gpu\": 1,\n      \"gpumem\": 100,\n      \"gpucores\": 0\n    }\n  ],\n  \"unresolved\": []\n}\n"},
		{name: "effective -o yaml: the JSON as YAML", args: []string{"effective", "-f", "-", "-o", "yaml"},
			stdin:    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 100}}}]}\n",
			wantText: "containers:\n- gpu: 1\n  gpucores: 0\n  gpumem: 100\n  name: c\n  role: app\neffective:\n  gpu: 1\n  gpucores: 0\n  gpumem: 100\nunresolved: []\n"},
		{name: "effective -o jsonpath", args: []string{"effective", "-f", pod, "-o", "jsonpath={range .containers[*]}{.name}={.gpumem} {end}"},
			wantText: "convert-weights=20480 server=10240 "},
		{name: "usage -o yaml", args: []string{"usage", "--state", state + "seed-init-done.yaml", "-o", "yaml"},
			wantTextSub: []string{"namespaces:\n  team-a:\n    limits:\n      gpumem: 24576\n    pods: 1\n", "nodes:\n  node1:\n    devices:\n"}},
		{name: "usage -o wide: quotas, unresolved pods, free memory and cores",
			args: []string{"usage", "--state", state + "cluster.yaml", "-o", "wide"},
			wantText: `NAMESPACE   PODS   GPU   GPUMEM(MiB)   GPUCORES   QUOTAS                UNRESOLVED
team-a      3      3/4   49152/65536   50/300     gpu-large,gpu-small   0
team-b      0      0/0   0/-           0/0        no-gpus               0

NODE     DEVICE   GPU   GPUMEM(MiB)   GPUCORES   FREE-GPUMEM(MiB)   FREE-GPUCORES
node-a   GPU-a1   1     30720/40960   50/100     10240              50
node-a   GPU-a2   1     20480/40960   30/100     20480              70
node-h   GPU-h1   1     8192/16384    0/100      8192               100
`, wantErrSub: "warning: pod team-b/broken"},
		{name: "usage -o jsonpath", args: []string{"usage", "--state", state + "cluster.yaml", "-n", "team-a", "-o", "jsonpath={.namespaces.team-a.used.gpumem}"},
			wantText: "49152", wantErrSub: "warning: node node-x"},
		{name: "eval -o wide: the denials and warnings counted", args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-done.yaml", "-o", "wide"},
			wantTextSub: []string{"KIND   NAMESPACE   NAME        ALLOWED   ADMITTED   GPU   GPUMEM(MiB)   GPUCORES   DENIALS   WARNINGS\n" +
				"Pod    team-a      small-job   true      1/1        1     12288         0          0         1\n"}},
		{name: "eval -o jsonpath, denied: exit 1", args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-running.yaml", "-o", "jsonpath={.allowed}"},
			wantCode: 1, wantText: "false"},
		{name: "eval -o yaml", args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-done.yaml", "-o", "yaml"},
			wantTextSub: []string{"allowed: true\ndenials: []\neffective:\n  gpu: 1\n"}},
		{name: "policy schema -o yaml", args: []string{"policy", "schema", "-o", "yaml"}, wantTextSub: []string{"title: gpuadmit PolicyInput gpuadmit.io/v1alpha1\n"}},
		{name: "policy schema takes no table", args: []string{"policy", "schema", "-o", "wide"}, wantCode: 2,
			wantErrSub: `--output "wide" is not a format this command prints: allowed formats are json, yaml, jsonpath=TEMPLATE`},
		{name: "a jsonpath that does not parse", args: []string{"usage", "--state", "x", "-o", "jsonpath={.a"}, wantCode: 2,
			wantErrSub: "gpuadmit usage: --output jsonpath={.a: unclosed action"},
		{name: "jsonpath= without a template", args: []string{"eval", "-f", "x", "-o", "jsonpath="}, wantCode: 2,
			wantErrSub: "--output jsonpath= needs a template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestSuggestions(t *testing.T) {
	tests := []cliCase{
		{name: "a command", args: []string{"usgae"}, wantCode: 2,
			wantErr: "gpuadmit: unknown command \"usgae\" for \"gpuadmit\"\n\nDid you mean this?\n\tusage\n\nSee 'gpuadmit --help' for usage.\n"},
		{name: "a subcommand", args: []string{"policy", "verfy", "x"}, wantCode: 2,
			wantErrSub: "gpuadmit policy: unknown command \"verfy\" for \"gpuadmit policy\"\n\nDid you mean this?\n\tverify\n"},
		{name: "a flag", args: []string{"usage", "--outptu", "json"}, wantCode: 2,
			wantErr: "gpuadmit usage: unknown flag: --outptu\n\nDid you mean this?\n\t--output\n\nSee 'gpuadmit usage --help' for usage.\n"},
		{name: "a flag with a value", args: []string{"eval", "--stat=x"}, wantCode: 2, wantErrSub: "unknown flag: --stat\n\nDid you mean this?\n\t--state\n"},
		{name: "nothing near", args: []string{"frobnicate"}, wantCode: 2,
			wantErr: "gpuadmit: unknown command \"frobnicate\" for \"gpuadmit\"\nSee 'gpuadmit --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestVersionJSON(t *testing.T) {
	want, err := json.Marshal(map[string]string{"version": "dev", "commit": "unknown", "buildDate": "unknown",
		"goVersion": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	cliCase{name: "version -o json", args: []string{"version", "-o", "json"}, wantOut: string(want)}.check(t)
	cliCase{name: "version -o yaml", args: []string{"version", "-o", "yaml"}, wantTextSub: []string{"buildDate: unknown\ncommit: unknown\n"}}.check(t)
	cliCase{name: "version takes no table", args: []string{"version", "-o", "table"}, wantCode: 2, wantErrSub: "allowed formats are json, yaml"}.check(t)
	if got := withVCS(versionInfo{}, nil); got.Commit != "" || got.BuildDate != "" {
		t.Errorf("no VCS stamp: %+v", got)
	}
}

// TestNoCluster: a live command no cluster answers says, in one line,
// which server it tried and how to point at another or run offline.
func TestNoCluster(t *testing.T) {
	dead := kubeconfig(t, "https://127.0.0.1:1", "")
	hint := "; point at a cluster with --kubeconfig FILE or --context NAME, or run offline on a dump with --state STATE.yaml\n"
	refused := `no cluster answers: the cluster of context "dead" at https://127.0.0.1:1 is not reachable (dial tcp 127.0.0.1:1: connect: connection refused)` + hint
	tests := []cliCase{
		{name: "usage", args: []string{"usage", "--kubeconfig", dead}, wantCode: 2, wantErr: "gpuadmit usage: " + refused},
		{name: "usage --config: the read of the state", args: []string{"usage", "--kubeconfig", dead, "--config", "../../../examples/config/memory-factor-1024.yaml"},
			wantCode: 2, wantErrSub: "\ngpuadmit usage: " + refused},
		{name: "eval", args: []string{"eval", "-f", pods + "sidecar.yaml", "--kubeconfig", dead}, wantCode: 2, wantErr: "gpuadmit eval: " + refused},
		{name: "no such kubeconfig", args: []string{"usage", "--kubeconfig", "nope.kubeconfig"}, wantCode: 2,
			wantErr: "gpuadmit usage: no --state given, reading the kubeconfig: stat nope.kubeconfig: no such file or directory" + hint},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestConnectionFlagsWhereTheyMatter: the help of a command that reads no
// cluster leaves kubectl's connection flags out.
func TestConnectionFlagsWhereTheyMatter(t *testing.T) {
	tests := []cliCase{
		{name: "usage", args: []string{"usage", "--help"}, wantTextSub: []string{"--kubeconfig string", "--context string", "-n, --namespace string"}},
		{name: "eval", args: []string{"eval", "--help"}, wantTextSub: []string{"--kubeconfig string", "--as-group stringArray"}},
	}
	for _, args := range [][]string{{"effective", "--help"}, {"policy", "verify", "--help"}, {"policy", "test", "-h"},
		{"policy", "schema", "--help"}, {"version", "--help"}, {"completion", "bash", "--help"}, {"help", "effective"}} {
		tests = append(tests, cliCase{name: strings.Join(args, " "), args: args,
			wantTextSub: []string{"Usage:"}, notInText: []string{"--kubeconfig", "--context", "--namespace", "Global Flags"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestNamespaceCompletion: -n completes the live cluster's namespaces,
// and nothing, silently, when no cluster answers.
func TestNamespaceCompletion(t *testing.T) {
	kc := startFakeAPI(t, &fakeAPI{namespaces: []string{"team-b", "team-a", "default"}}, "")
	tests := []cliCase{
		{name: "the cluster's namespaces", args: []string{"__complete", "usage", "--kubeconfig", kc, "-n", "team"},
			wantText: "team-a\nteam-b\n:4\n", wantErrSub: "Completion ended with directive: ShellCompDirectiveNoFileComp"},
		{name: "no cluster", args: []string{"__complete", "eval", "--kubeconfig", kubeconfig(t, "https://127.0.0.1:1", ""), "-n", ""},
			wantText: ":4\n", wantErrSub: "Completion ended with directive: ShellCompDirectiveNoFileComp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
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
	tests := []cliCase{
		{name: "policy verify of a Pod", args: []string{"policy", "verify", pods + "sidecar.yaml"}, wantCode: 2,
			wantErr: "gpuadmit policy verify: " + pods + "sidecar.yaml is a Pod manifest, not a policy suite (kind PolicySuite, apiVersion gpuadmit.io/v1alpha1; docs/policy-verify.md)\n"},
		{name: "policy verify of a dump", args: []string{"policy", "verify", state + "cluster.yaml"}, wantCode: 2,
			wantErrSub: "cluster.yaml is a List, Node, ResourceQuota, Pod, Namespace manifest, not a policy suite"},
		{name: "eval -f of a suite", args: []string{"eval", "-f", suite, "--state", state + "cluster.yaml"}, wantCode: 2,
			wantErrSub: "gpuadmit eval: " + suite + ": no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found; " +
				suite + " is a policy suite (kind PolicySuite): run it with 'gpuadmit policy verify " + suite + "'\n"},
		{name: "effective -f of a suite on standard input", args: []string{"effective", "-f", "-"}, stdin: "apiVersion: gpuadmit.io/v1alpha1\nkind: PolicySuite\n",
			wantCode: 2, wantErrSub: "; - is a policy suite (kind PolicySuite): run it with 'gpuadmit policy verify -'"},
		{name: "effective -f of a configuration", args: []string{"effective", "-f", cfg}, wantCode: 2,
			wantErrSub: "or ResourceClaim found; they hold only Configuration\n"},
		{name: "--state of a suite", args: []string{"usage", "--state", suite}, wantCode: 2,
			wantErrSub: "(1 other objects); " + suite + " is a policy suite (kind PolicySuite)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// syncBuffer is a bytes.Buffer the progress lines and the test share;
// each Write is also sent on lines, when set.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	lines chan string
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lines != nil {
		s.lines <- string(p)
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nextProgress is the next progress line written; the test fails when
// none comes (a bound only for a broken progress, which would otherwise
// hang).
func (s *syncBuffer) nextProgress(t *testing.T) string {
	t.Helper()
	for {
		select {
		case l := <-s.lines:
			if strings.HasPrefix(l, "reading the cluster") {
				return l
			}
		case <-time.After(time.Minute):
			t.Fatalf("no progress line written; so far %q", s.String())
			return ""
		}
	}
}

// TestProgress: a slow live read tells the pods listed so far after its
// delay, then once per interval, and no line after it ends: no timer is
// left that could print one, and time passing prints nothing. The clock
// is stepped; each line is waited for as it is written.
func TestProgress(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	w := syncBuffer{lines: make(chan string, 64)}
	p := newProgress(&w, clk, 2*time.Second, time.Second)
	p.listed(500)
	clk.Step(2 * time.Second)
	if got := w.nextProgress(t); got != "reading the cluster: 500 pods listed...\n" {
		t.Fatalf("after the delay: %q", got)
	}
	p.listed(700)
	clk.Step(time.Second)
	if got := w.nextProgress(t); got != "reading the cluster: 700 pods listed...\n" {
		t.Fatalf("after an interval: %q", got)
	}
	p.end()
	p.end()
	if clk.HasWaiters() {
		t.Fatal("a progress timer is still armed after end: a line can come after it")
	}
	clk.Step(time.Hour)
	if got := w.String(); got != "reading the cluster: 500 pods listed...\nreading the cluster: 700 pods listed...\n" {
		t.Errorf("lines after end: %q", got)
	}
	var nothing *progress
	nothing.listed(1)
	nothing.end()
}

// TestProgressOnTerminal: a live read held in flight past the delay tells
// its progress on stderr when stderr is a terminal, and says nothing (no
// timer armed) elsewhere.
func TestProgressOnTerminal(t *testing.T) {
	for _, tty := range []bool{true, false} {
		listing, release := make(chan struct{}, 1), make(chan struct{})
		kc := startFakeAPI(t, &fakeAPI{listingPods: listing, release: release}, "team-x")
		clk := clocktesting.NewFakeClock(time.Unix(0, 0))
		var out syncBuffer
		errOut := syncBuffer{lines: make(chan string, 64)}
		c := newCLI(strings.NewReader(""), &out, &errOut)
		c.tty = func(io.Writer) bool { return tty }
		c.clock, c.progressAfter, c.progressEvery = clk, 2*time.Second, time.Hour
		done := make(chan int)
		go func() { done <- c.execute(t.Context(), "gpuadmit", []string{"usage", "--kubeconfig", kc, "-A"}) }()
		<-listing // the pod list is in flight, the progress started
		if clk.HasWaiters() != tty {
			t.Errorf("terminal %v: a progress timer armed: %v", tty, clk.HasWaiters())
		}
		clk.Step(2 * time.Second)
		if tty {
			if got := errOut.nextProgress(t); got != "reading the cluster: 0 pods listed...\n" {
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
	tests := []cliCase{
		{name: "verify -o jsonpath totals", args: []string{"policy", "verify", suite, "-o", "jsonpath={.failed} failed, {.cases[0].name}"},
			wantText: "0 failed, required-labels/denied without a cost-center label"},
		{name: "verify -o yaml", args: []string{"policy", "verify", suite, "-o", "yaml"},
			wantTextSub: []string{"cases:\n- name: required-labels/denied without a cost-center label\n  passed: true\n", "failed: 0\n"}},
		{name: "verify text unchanged", args: []string{"policy", "verify", suite},
			wantTextSub: []string{"PASS  required-labels/denied without a cost-center label\n", " passed, 0 failed\n"}},
		{name: "test -o jsonpath", args: []string{"policy", "test", "-o", "jsonpath={[0].package}"}, wantText: "data.gpuadmit.builtin_test"},
		{name: "test --coverage -o json refused", args: []string{"policy", "test", "--coverage", "-o", "json"}, wantCode: 2,
			wantErrSub: "--coverage reports in text: use it without -o"},
		{name: "verify -o wide refused", args: []string{"policy", "verify", suite, "-o", "wide"}, wantCode: 2,
			wantErrSub: "allowed formats are json, yaml, jsonpath=TEMPLATE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
