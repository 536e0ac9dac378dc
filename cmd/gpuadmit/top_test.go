package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// quotaDoc is a ResourceQuota of ns whose spec.hard is hard ("key: value, ...").
func quotaDoc(ns, name, hard string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: %s, namespace: %s}\nspec: {hard: {%s}}\n", name, ns, hard)
}

// podDoc is a running pod of ns with one container of count devices of
// memMiB and cores each, bound to node ("" for none).
func podDoc(ns, name, node string, count, memMiB, cores int64) string {
	bound := ""
	if node != "" {
		bound = "nodeName: " + node + ", "
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\n"+
		"spec: {%scontainers: [{name: c, resources: {limits: {nvidia.com/gpu: %d, nvidia.com/gpumem: %d, nvidia.com/gpucores: %d}}}]}\n",
		name, ns, bound, count, memMiB, cores)
}

// stateOf is a multi-document dump of docs.
func stateOf(docs ...string) string { return strings.Join(docs, "---\n") }

const topSeed = state + "seed-init-running.yaml"

func TestTopCommand(t *testing.T) {
	lowered := stateOf(quotaDoc("team-a", "gpu-quota", `limits.nvidia.com/gpumem: "8192", limits.nvidia.com/gpu: "4"`),
		podDoc("team-a", "big", "node1", 1, 6144, 0), podDoc("team-a", "small", "", 1, 4096, 0))
	tests := []cliCase{
		{name: "the namespace against its limit, the pod's charge",
			args: []string{"top", "--state", topSeed},
			wantText: `NAMESPACE   PODS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      1      1/-   -      20480/24576   83%       0/-        -           -

NAMESPACE   KIND   NAME         NODE    STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      Pod    llm-server   node1   full    1     20480         0
`},
		{name: "-o wide: the quotas and unresolved pods",
			args:        []string{"top", "--state", topSeed, "-o", "wide"},
			wantTextSub: []string{"OVER   QUOTAS      UNRESOLVED\n", "-      gpu-quota   0\n"}},
		{name: "-o json: the stable shape",
			args: []string{"top", "--state", topSeed, "-o", "json"},
			wantOut: `{"namespaces":[{"name":"team-a","pods":1,"used":{"gpu":1,"gpumem":20480,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},
				"limits":{"gpumem":24576},"percent":{"gpumem":83},"quotas":["gpu-quota"],
				"charges":[{"kind":"Pod","name":"llm-server","node":"node1","state":"full","used":{"gpu":1,"gpumem":20480,"gpucores":0}}]}],
				"overNamespaces":[]}`},
		{name: "a what-if under the usage marks the namespace over; exit 0 without --fail-over",
			args: []string{"top", "--state", topSeed, "--what-if", "team-a=nvidia.com/gpumem=8192"},
			wantText: `NAMESPACE   PODS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      1      1/-   -      20480/8192    250%      0/-        -           nvidia.com/gpumem(what-if)

NAMESPACE   KIND   NAME         NODE    STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      Pod    llm-server   node1   full    1     20480         0

what-if: namespace team-a, nvidia.com/gpumem: limit 8192 instead of 24576
`},
		{name: "--fail-over: exit 1, the over list in JSON",
			args:     []string{"top", "--state", topSeed, "--what-if", "team-a=nvidia.com/gpumem=8192", "--fail-over", "-o", "jsonpath={.overNamespaces} {.namespaces[0].over}"},
			wantCode: 1,
			wantText: `["team-a"] [{"charged":20480,"family":"nvidia","key":"limits.nvidia.com/gpumem","limit":8192,"reserved":0,"resource":"nvidia.com/gpumem","used":20480,"whatIf":true}]`},
		{name: "a what-if with the limits. prefix raising the limit: within, --fail-over exits 0",
			args:     []string{"top", "--state", topSeed, "--what-if", "team-a=limits.nvidia.com/gpumem=20480", "--fail-over", "-o", "jsonpath={.overNamespaces} {.namespaces[0].percent.gpumem}"},
			wantText: "[] 100"},
		{name: "a what-if on a resource the namespace has no limit of adds one",
			args:     []string{"top", "--state", topSeed, "--what-if", "team-a=nvidia.com/gpu=0", "-o", "jsonpath={.namespaces[0].over[0].resource} {.whatIf}"},
			wantText: `nvidia.com/gpu [{"limit":0,"namespace":"team-a","resource":"nvidia.com/gpu"}]`},
		{name: "memory in the resource's unit, times memoryFactor as a quota's",
			args: []string{"top", "--state", "-", "--config", "../../examples/config/memory-factor-1024.yaml",
				"--what-if", "ns=nvidia.com/gpumem=2", "-o", "jsonpath={.whatIf[0].limit} {.namespaces[0].used.gpumem} {.overNamespaces}"},
			stdin:    podDoc("ns", "p", "", 1, 3, 0),
			wantText: `2048 3072 ["ns"]`, wantErrSub: "gpuadmit top: configuration from --config"},
		{name: "over the actual limit (a quota lowered under use): marked without a what-if",
			args:  []string{"top", "--state", "-", "--fail-over"},
			stdin: lowered, wantCode: 1,
			wantText: `NAMESPACE   PODS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      2      2/4   50%    10240/8192    125%      0/-        -           nvidia.com/gpumem

NAMESPACE   KIND   NAME    NODE    STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      Pod    big     node1   full    1     6144          0
team-a      Pod    small   -       full    1     4096          0
`},
		{name: "a namespace with no limit is never over, still listed with its usage",
			args: []string{"top", "--state", "-", "--fail-over", "-A"}, stdin: podDoc("free", "p", "", 8, 1<<20, 100),
			wantTextSub: []string{"free        1      8/-   -      8388608/-     -         800/-      -           -\n"}},
		{name: "-n of a namespace the state lacks: zero, no limits, no charges",
			args:    []string{"top", "--state", topSeed, "-n", "team-z", "-o", "json"},
			wantOut: `{"namespaces":[{"name":"team-z","pods":0,"used":{"gpu":0,"gpumem":0,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"percent":{},"charges":[]}],"overNamespaces":[]}`},
		{name: "a template's claim not made yet: nothing charged (the claim is decided and charged once created)",
			args: []string{"top", "--state", "-"}, stdin: stateOf(mustRead(t, draData+"dra-state.yaml"), mustRead(t, draData+"template-pod.yaml")),
			wantText: `NAMESPACE   PODS   CLAIMS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      0      1        1/-   -      12288/16384   75%       0/-        -           -

NAMESPACE   KIND            NAME      NODE   STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      ResourceClaim   train-a   -      -       1     12288         0
`},
		{name: "a limit of 0 passed: no percentage, over",
			args:  []string{"top", "--state", "-", "-o", "jsonpath={.namespaces[0].percent} {.overNamespaces}"},
			stdin: stateOf(quotaDoc("ns", "q", `limits.nvidia.com/gpu: "0"`), podDoc("ns", "p", "", 1, 1, 0)), wantText: `{} ["ns"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestTopSortBy: namespaces and their pods largest first by what
// --sort-by names, by name among equals.
func TestTopSortBy(t *testing.T) {
	st := stateOf(quotaDoc("a", "q", `limits.nvidia.com/gpumem: "100000"`), quotaDoc("b", "q", `limits.nvidia.com/gpu: "4"`),
		podDoc("a", "a-mem", "", 1, 40000, 10), podDoc("a", "a-cores", "", 1, 1000, 90),
		podDoc("b", "b-gpus", "", 3, 100, 0), podDoc("c", "c-none", "", 1, 2000, 0))
	names := "{.namespaces[*].name} / {.namespaces[0].charges[*].name}"
	tests := []struct{ by, want string }{
		{"used", "b a c / b-gpus"},
		{"gpu", "b a c / b-gpus"},
		{"memory", "a c b / a-mem a-cores"},
		{"cores", "a b c / a-cores a-mem"},
		{"percent", "b a c / b-gpus"}, // b: 3 of 4 GPUs (75%); a: 41%; c: no limit
		{"name", "a b c / a-cores a-mem"},
	}
	for _, tt := range tests {
		t.Run(tt.by, (cliCase{args: []string{"top", "--state", "-", "-A", "--sort-by", tt.by, "-o", "jsonpath=" + names}, stdin: st, wantText: tt.want}).check)
	}
}

// TestTopWhatIfHostile: every malformed --what-if is an error naming what
// is wrong, before anything is printed.
func TestTopWhatIfHostile(t *testing.T) {
	want := "want NAMESPACE=RESOURCE=LIMIT, as in team-a=nvidia.com/gpumem=8192"
	tests := []struct{ arg, wantErr string }{
		{"team-a", want},
		{"team-a=nvidia.com/gpumem", want},
		{"=nvidia.com/gpu=1", "the namespace is empty; " + want},
		{"team-a==1", "the resource is empty"},
		{"team-a=nvidia.com/gpu=", "the limit is empty"},
		{"team-a=limits.=1", "the resource is empty"},
		{"Team_A=nvidia.com/gpu=1", `"Team_A" is not a namespace name: a lowercase RFC 1123 label`},
		{"../x=nvidia.com/gpu=1", `"../x" is not a namespace name`},
		{"team-a=nvidia.com/gpumemory=1", "nvidia.com/gpumemory is not a resource gpuadmit manages; the managed ones are nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores"},
		{"team-a=requests.nvidia.com/gpu=1", "requests.nvidia.com/gpu is not a resource gpuadmit manages"},
		{"team-a=nvidia.com/gpumem-percentage=50", "nvidia.com/gpumem-percentage is not a resource gpuadmit manages"},
		{"team-a=nvidia.com/gpu=1.5", `limit "1.5" of nvidia.com/gpu: must be a whole number`},
		{"team-a=nvidia.com/gpu=-1", `limit "-1" of nvidia.com/gpu: must not be negative`},
		{"team-a=nvidia.com/gpu=1=2", `limit "1=2" of nvidia.com/gpu: not a quantity`},
		{"team-a=nvidia.com/gpu=lots", `limit "lots" of nvidia.com/gpu: not a quantity`},
		{"team-a=nvidia.com/gpumem=99999999999999999999", `limit "99999999999999999999" of nvidia.com/gpumem: does not fit in a 64-bit integer`},
		{"team-z=nvidia.com/gpu=1", "namespace team-z has no GPU pods, claims or ResourceQuotas in the state; the namespaces shown are team-a"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, (cliCase{args: []string{"top", "--state", topSeed, "--what-if", tt.arg}, wantCode: 2,
			wantErrSub: fmt.Sprintf("gpuadmit top: --what-if %q: %s", tt.arg, tt.wantErr)}).check)
	}
	others := []cliCase{
		{name: "the same limit twice", args: []string{"top", "--state", topSeed, "--what-if", "team-a=nvidia.com/gpu=1", "--what-if", "team-a=limits.nvidia.com/gpu=2"},
			wantCode: 2, wantErrSub: `--what-if "team-a=limits.nvidia.com/gpu=2": namespace team-a's nvidia.com/gpu is given twice`},
		{name: "a namespace -n does not show", args: []string{"top", "--state", topSeed, "-n", "team-b", "--what-if", "team-a=nvidia.com/gpu=1"},
			wantCode: 2, wantErrSub: `--what-if "team-a=nvidia.com/gpu=1": namespace team-a is not shown (-n team-b)`},
		{name: "memory times memoryFactor past 64 bits", args: []string{"top", "--state", topSeed, "--config", "../../examples/config/memory-factor-1024.yaml",
			"--what-if", "team-a=nvidia.com/gpumem=9007199254740993"}, wantCode: 2,
			wantErrSub: `limit "9007199254740993" of nvidia.com/gpumem: times memoryFactor 1024 does not fit in a 64-bit integer`},
		{name: "a bad --sort-by", args: []string{"top", "--state", topSeed, "--sort-by", "mem"}, wantCode: 2,
			wantErrSub: `gpuadmit top: --sort-by "mem": want one of used, memory, gpu, cores, percent, name`},
		{name: "no argument", args: []string{"top", "team-a"}, wantCode: 2, wantErrSub: `gpuadmit top: unexpected argument "team-a"`},
		{name: "--gpuadmit-namespace with --state", args: []string{"top", "--state", topSeed, "--gpuadmit-namespace", "x"}, wantCode: 2,
			wantErrSub: "--gpuadmit-namespace names where the cluster's configuration is read"},
	}
	for _, tt := range others {
		t.Run(tt.name, tt.check)
	}
}

func TestPercent(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	tests := []struct {
		charged int64
		limit   *int64
		want    *int64
		load    int64
	}{
		{charged: 5, limit: nil, want: nil, load: -1},
		{charged: 0, limit: p(0), want: nil, load: 0},
		{charged: 1, limit: p(0), want: nil, load: math.MaxInt64},
		{charged: 0, limit: p(10), want: p(0), load: 0},
		{charged: 20480, limit: p(24576), want: p(83), load: 83}, // rounded down
		{charged: 3, limit: p(3), want: p(100), load: 100},
		{charged: math.MaxInt64, limit: p(1), want: p(math.MaxInt64), load: math.MaxInt64},
		{charged: math.MaxInt64, limit: p(math.MaxInt64), want: p(100), load: 100},
	}
	for _, tt := range tests {
		got := percent(tt.charged, tt.limit)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("percent(%d, %v) = %v, want %v", tt.charged, tt.limit, got, tt.want)
		}
		if l := loadOf(tt.charged, tt.limit); l != tt.load {
			t.Errorf("loadOf(%d, %v) = %d, want %d", tt.charged, tt.limit, l, tt.load)
		}
	}
}

// TestTopAuditCommandLine: the commands are listed, suggested, completed
// and helped like the others, as the kubectl plugin too.
func TestTopAuditCommandLine(t *testing.T) {
	dead := kubeconfig(t, "https://127.0.0.1:1", "")
	tests := []cliCase{
		{name: "the root's help lists them", args: []string{"--help"},
			wantTextSub: []string{"  top         Show what each namespace, pod and claim is charged", "  audit       List the namespaces whose GPU usage is over a limit"}},
		{name: "top's help has the connection flags", args: []string{"top", "--help"}, wantTextSub: []string{"--what-if stringArray", "--kubeconfig string"}},
		{name: "audit's help as the plugin", as: "kubectl gpuadmit", args: []string{"audit", "--help"},
			wantTextSub: []string{"kubectl gpuadmit audit [--state STATE.yaml]", "  kubectl gpuadmit audit --state state.yaml -n team-a -o json"}},
		{name: "a mistyped top", args: []string{"tpo"}, wantCode: 2, wantErrSub: "Did you mean this?\n\ttop\n"},
		{name: "a mistyped audit", args: []string{"audti"}, wantCode: 2, wantErrSub: "Did you mean this?\n\taudit\n"},
		{name: "a mistyped flag", args: []string{"top", "--what-fi", "x"}, wantCode: 2, wantErrSub: "Did you mean this?\n\t--what-if\n"},
		{name: "--sort-by completes", args: []string{"__complete", "top", "--sort-by", ""},
			wantTextSub: []string{"used\nmemory\ngpu\ncores\npercent\nname\n:4\n"}, wantErrSub: "ShellCompDirectiveNoFileComp"},
		{name: "audit's -o completes its formats", args: []string{"__complete", "audit", "-o", ""},
			wantTextSub: []string{"table\njson\nyaml\njsonpath=\n:4\n"}, wantErrSub: "ShellCompDirectiveNoFileComp"},
		{name: "commands complete", args: []string{"__complete", "a"}, wantTextSub: []string{"audit\t"}, wantErrSub: "ShellCompDirective"},
		{name: "top: no cluster answers", args: []string{"top", "--kubeconfig", dead}, wantCode: 2,
			wantErrSub: `gpuadmit top: no cluster answers: the cluster of context "dead" at https://127.0.0.1:1 is not reachable`},
		{name: "audit: no cluster answers", args: []string{"audit", "--kubeconfig", dead}, wantCode: 2,
			wantErrSub: `gpuadmit audit: no cluster answers: the cluster of context "dead" at https://127.0.0.1:1 is not reachable`},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestTopFamilies: every family of a namespace has its row, its
// reservations in its cells and its limits (a what-if's too) checked.
func TestTopFamilies(t *testing.T) {
	objs, err := manifest.ReadFile("-", strings.NewReader(familiesState))
	if err != nil {
		t.Fatal(err)
	}
	l := ledgerOf(objs, charging{families: twoFamilies()}, logr.Discard())
	reserved := map[string][]reservation.Reservation{"team-b": {{UID: "u1", Name: "admitted", Demand: effective.UsageOf(ascend, effective.Vector{GPU: 2})}}}
	ws, err := parseWhatIfs([]string{"team-a=huawei.com/Ascend910B2=2"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := topReport(l.Snapshot(reserved), l.Charges, twoFamilies(), ws, "", sortName)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := printTop(&table, out, false); err != nil {
		t.Fatal(err)
	}
	wantTable := `NAMESPACE   FAMILY         PODS   GPU     GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      nvidia         1      1/2     50%    1024/8192     12%       0/-        -           -
team-a      ascend-910B2   1      3/2     150%   8192/16384    50%       0/-        -           huawei.com/Ascend910B2(what-if)
team-b      ascend-910B2   0      0+2/1   200%   0/-           -         0/-        -           huawei.com/Ascend910B2

NAMESPACE   FAMILY         KIND   NAME    NODE   STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      nvidia         Pod    mixed   -      full    1     1024          0
team-a      ascend-910B2   Pod    mixed   -      full    3     8192          0

what-if: namespace team-a, huawei.com/Ascend910B2: limit 2 instead of 4
`
	if table.String() != wantTable {
		t.Errorf("table\n%s\nwant\n%s", table.String(), wantTable)
	}
	want := `{"namespaces":[{"name":"team-a","pods":1,"used":{"gpu":1,"gpumem":1024,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":2,"gpumem":8192},"percent":{"gpu":50,"gpumem":12},` +
		`"families":{"ascend-910B2":{"used":{"gpu":3,"gpumem":8192,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":2,"gpumem":16384},"percent":{"gpu":150,"gpumem":50}}},"quotas":["q-both","q-npu","q-nv"],` +
		`"over":[{"family":"ascend-910B2","resource":"huawei.com/Ascend910B2","used":3,"reserved":0,"charged":3,"limit":2,"key":"limits.huawei.com/Ascend910B2","whatIf":true}],` +
		`"charges":[{"kind":"Pod","name":"mixed","state":"full","used":{"gpu":1,"gpumem":1024,"gpucores":0},"families":{"ascend-910B2":{"gpu":3,"gpumem":8192,"gpucores":0}}}]},` +
		`{"name":"team-b","pods":0,"used":{"gpu":0,"gpumem":0,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"percent":{},` +
		`"families":{"ascend-910B2":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"reserved":{"gpu":2,"gpumem":0,"gpucores":0},"limits":{"gpu":1},"percent":{"gpu":200}}},` +
		`"quotas":["npus"],"over":[{"family":"ascend-910B2","resource":"huawei.com/Ascend910B2","used":0,"reserved":2,"charged":2,"limit":1,"quota":"npus","key":"limits.huawei.com/Ascend910B2"}],` +
		`"charges":[]}],"overNamespaces":["team-a","team-b"],"whatIf":[{"namespace":"team-a","resource":"huawei.com/Ascend910B2","limit":2,"actual":4}]}`
	if got := compact(t, out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
