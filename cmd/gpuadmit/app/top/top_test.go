package top_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

func TestTopCommand(t *testing.T) {
	lowered := fixtures.StateOf(fixtures.QuotaDoc("team-a", "gpu-quota", `limits.nvidia.com/gpumem: "8192", limits.nvidia.com/gpu: "4"`),
		fixtures.PodDoc("team-a", "big", "node1", 1, 6144, 0), fixtures.PodDoc("team-a", "small", "", 1, 4096, 0))
	tests := []apptest.Case{
		{Name: "the namespace against its limit, the pod's charge",
			Args: []string{"top", "--state", fixtures.TopSeed},
			WantText: `NAMESPACE   PODS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      1      1/-   -      20480/24576   83%       0/-        -           -

NAMESPACE   KIND   NAME         NODE    STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      Pod    llm-server   node1   full    1     20480         0
`},
		{Name: "-o wide: the quotas and unresolved pods",
			Args:        []string{"top", "--state", fixtures.TopSeed, "-o", "wide"},
			WantTextSub: []string{"OVER   QUOTAS      UNRESOLVED\n", "-      gpu-quota   0\n"}},
		{Name: "-o json: the stable shape",
			Args: []string{"top", "--state", fixtures.TopSeed, "-o", "json"},
			WantOut: `{"namespaces":{"team-a":{"pods":1,"used":{"gpu":1,"gpumem":20480,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},
				"limits":{"gpumem":24576},"percent":{"gpumem":83},"quotas":["gpu-quota"],
				"charges":[{"kind":"Pod","name":"llm-server","node":"node1","state":"full","user":"system:serviceaccount:team-a:default","used":{"gpu":1,"gpumem":20480,"gpucores":0}}]}},
				"overNamespaces":[]}`},
		{Name: "a what-if under the usage marks the namespace over; exit 0 without --fail-over",
			Args: []string{"top", "--state", fixtures.TopSeed, "--what-if", "team-a=nvidia.com/gpumem=8192"},
			WantText: `NAMESPACE   PODS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      1      1/-   -      20480/8192    250%      0/-        -           nvidia.com/gpumem(what-if)

NAMESPACE   KIND   NAME         NODE    STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      Pod    llm-server   node1   full    1     20480         0

what-if: namespace team-a, nvidia.com/gpumem: limit 8192 instead of 24576
`},
		{Name: "--fail-over: exit 1, the over list in JSON",
			Args:     []string{"top", "--state", fixtures.TopSeed, "--what-if", "team-a=nvidia.com/gpumem=8192", "--fail-over", "-o", "jsonpath={.overNamespaces} {.namespaces.team-a.over}"},
			WantCode: 1,
			WantText: `["team-a"] [{"charged":20480,"family":"nvidia","key":"limits.nvidia.com/gpumem","limit":8192,"reserved":0,"resource":"nvidia.com/gpumem","used":20480,"whatIf":true}]`},
		{Name: "a what-if with the limits. prefix raising the limit: within, --fail-over exits 0",
			Args:     []string{"top", "--state", fixtures.TopSeed, "--what-if", "team-a=limits.nvidia.com/gpumem=20480", "--fail-over", "-o", "jsonpath={.overNamespaces} {.namespaces.team-a.percent.gpumem}"},
			WantText: "[] 100"},
		{Name: "a what-if on a resource the namespace has no limit of adds one",
			Args:     []string{"top", "--state", fixtures.TopSeed, "--what-if", "team-a=nvidia.com/gpu=0", "-o", "jsonpath={.namespaces.team-a.over[0].resource} {.whatIf}"},
			WantText: `nvidia.com/gpu [{"limit":0,"namespace":"team-a","resource":"nvidia.com/gpu"}]`},
		{Name: "memory in the resource's unit, times memoryFactor as a quota's",
			Args: []string{"top", "--state", "-", "--config", "../../../../examples/config/memory-factor-1024.yaml",
				"--what-if", "ns=nvidia.com/gpumem=2", "-o", "jsonpath={.whatIf[0].limit} {.namespaces.ns.used.gpumem} {.overNamespaces}"},
			Stdin:    fixtures.PodDoc("ns", "p", "", 1, 3, 0),
			WantText: `2048 3072 ["ns"]`, WantErrSub: "gpuadmit top: configuration from --config"},
		{Name: "over the actual limit (a quota lowered under use): marked without a what-if",
			Args:  []string{"top", "--state", "-", "--fail-over"},
			Stdin: lowered, WantCode: 1,
			WantText: `NAMESPACE   PODS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      2      2/4   50%    10240/8192    125%      0/-        -           nvidia.com/gpumem

NAMESPACE   KIND   NAME    NODE    STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      Pod    big     node1   full    1     6144          0
team-a      Pod    small   -       full    1     4096          0
`},
		{Name: "a namespace with no limit is never over, still listed with its usage",
			Args: []string{"top", "--state", "-", "--fail-over", "-A"}, Stdin: fixtures.PodDoc("free", "p", "", 8, 1<<20, 100),
			WantTextSub: []string{"free        1      8/-   -      8388608/-     -         800/-      -           -\n"}},
		{Name: "-n of a namespace the state lacks: an error",
			Args: []string{"top", "--state", fixtures.TopSeed, "-n", "team-z", "-o", "json"}, WantCode: 2, WantErrSub: `gpuadmit top: namespace "team-z" not found`},
		{Name: "a template's claim not made yet: nothing charged (the claim is decided and charged once created)",
			Args: []string{"top", "--state", "-"}, Stdin: fixtures.StateOf(fixtures.MustRead(t, fixtures.DraData+"dra-state.yaml"), fixtures.MustRead(t, fixtures.DraData+"template-pod.yaml")),
			WantText: `NAMESPACE   PODS   CLAIMS   GPU   GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      0      1        1/-   -      12288/16384   75%       0/-        -           -

NAMESPACE   KIND            NAME      NODE   STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      ResourceClaim   train-a   -      -       1     12288         0
`},
		{Name: "a limit of 0 passed: no percentage, over",
			Args:  []string{"top", "--state", "-", "-o", "jsonpath={.namespaces.ns.percent} {.overNamespaces}"},
			Stdin: fixtures.StateOf(fixtures.QuotaDoc("ns", "q", `limits.nvidia.com/gpu: "0"`), fixtures.PodDoc("ns", "p", "", 1, 1, 0)), WantText: `{} ["ns"]`},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

// TestTopSortBy: namespaces and their pods largest first by what
// --sort-by names, by name among equals.
func TestTopSortBy(t *testing.T) {
	st := fixtures.StateOf(fixtures.QuotaDoc("a", "q", `limits.nvidia.com/gpumem: "100000"`), fixtures.QuotaDoc("b", "q", `limits.nvidia.com/gpu: "4"`),
		fixtures.PodDoc("a", "a-mem", "", 1, 40000, 10), fixtures.PodDoc("a", "a-cores", "", 1, 1000, 90),
		fixtures.PodDoc("b", "b-gpus", "", 3, 100, 0), fixtures.PodDoc("c", "c-none", "", 1, 2000, 0))
	// The rows of -o custom-columns, as the table's, in --sort-by order.
	names := "custom-columns=NS:.name,CHARGES:.charges[*].name"
	tests := []struct{ by, want string }{
		{"used", "b a c / b-gpus"},
		{"gpu", "b a c / b-gpus"},
		{"memory", "a c b / a-mem a-cores"},
		{"cores", "a b c / a-cores a-mem"},
		{"percent", "b a c / b-gpus"}, // b: 3 of 4 GPUs (75%); a: 41%; c: no limit
		{"name", "a b c / a-cores a-mem"},
	}
	for _, tt := range tests {
		t.Run(tt.by, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := []string{"top", "--state", "-", "-A", "--sort-by", tt.by, "-o", names, "--no-headers"}
			if code := apptest.Run(args, strings.NewReader(st), &out, &errOut); code != 0 {
				t.Fatalf("exit code %d: %s", code, errOut.String())
			}
			var ns []string
			var first string
			for i, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				f := strings.Fields(line)
				ns = append(ns, f[0])
				if i == 0 {
					first = strings.Join(f[1:], " ")
				}
			}
			if got := strings.Join(ns, " ") + " / " + first; got != tt.want {
				t.Errorf("%s, want %s", got, tt.want)
			}
		})
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
		{"team-a=nvidia.com/gpu=1.5", `limit "1.5" of nvidia.com/gpu: not a whole number: enforced as 1`},
		{"team-a=nvidia.com/gpumem=24Gi", `limit "24Gi" of nvidia.com/gpumem: a memory limit in bytes: enforced as 24576 MiB`},
		{"team-a=nvidia.com/gpu=-1", `limit "-1" of nvidia.com/gpu: must not be negative`},
		{"team-a=nvidia.com/gpu=1=2", `limit "1=2" of nvidia.com/gpu: not a quantity`},
		{"team-a=nvidia.com/gpu=lots", `limit "lots" of nvidia.com/gpu: not a quantity`},
		{"team-a=nvidia.com/gpu=99999999999999999999", `limit "99999999999999999999" of nvidia.com/gpu: the value does not fit in a 64-bit integer`},
		{"team-a=nvidia.com/gpumem=99999999999999999999", `limit "99999999999999999999" of nvidia.com/gpumem: a memory limit in bytes: enforced as 95367431640624 MiB`},
		{"team-z=nvidia.com/gpu=1", "namespace team-z has no GPU pods, claims or ResourceQuotas in the state; the namespaces shown are team-a"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, (apptest.Case{Args: []string{"top", "--state", fixtures.TopSeed, "--what-if", tt.arg}, WantCode: 2,
			WantErrSub: fmt.Sprintf("gpuadmit top: --what-if %q: %s", tt.arg, tt.wantErr)}).Check)
	}
	others := []apptest.Case{
		{Name: "the same limit twice", Args: []string{"top", "--state", fixtures.TopSeed, "--what-if", "team-a=nvidia.com/gpu=1", "--what-if", "team-a=limits.nvidia.com/gpu=2"},
			WantCode: 2, WantErrSub: `--what-if "team-a=limits.nvidia.com/gpu=2": namespace team-a's nvidia.com/gpu is given twice`},
		{Name: "a namespace -n does not show", Args: []string{"top", "--state", fixtures.TopSeed, "-n", "team-b", "--what-if", "team-a=nvidia.com/gpu=1"},
			WantCode: 2, WantErrSub: `--what-if "team-a=nvidia.com/gpu=1": namespace team-a is not shown (-n team-b)`},
		{Name: "memory times memoryFactor, not whole: refused with what a quota would enforce", Args: []string{"top", "--state", fixtures.TopSeed, "--config", "../../../../examples/config/memory-factor-1024.yaml",
			"--what-if", "team-a=nvidia.com/gpumem=900719925.5"}, WantCode: 2,
			WantErrSub: `limit "900719925.5" of nvidia.com/gpumem: not a whole number: enforced as 922337203712 MiB`},
		{Name: "memory in bytes whatever memoryFactor", Args: []string{"top", "--state", fixtures.TopSeed, "--config", "../../../../examples/config/memory-factor-1024.yaml",
			"--what-if", "team-a=nvidia.com/gpumem=9007199254740993"}, WantCode: 2,
			WantErrSub: `limit "9007199254740993" of nvidia.com/gpumem: a memory limit in bytes: enforced as 8589934592 MiB`},
		{Name: "a bad --sort-by", Args: []string{"top", "--state", fixtures.TopSeed, "--sort-by", "mem"}, WantCode: 2,
			WantErrSub: `gpuadmit top: --sort-by "mem": want one of used, memory, gpu, cores, percent, name`},
		{Name: "no argument", Args: []string{"top", "team-a"}, WantCode: 2, WantErrSub: `gpuadmit top: unexpected argument "team-a"`},
		{Name: "--gpuadmit-namespace with --state", Args: []string{"top", "--state", fixtures.TopSeed, "--gpuadmit-namespace", "x"}, WantCode: 2,
			WantErrSub: "--gpuadmit-namespace names where the cluster's configuration is read"},
	}
	for _, tt := range others {
		t.Run(tt.Name, tt.Check)
	}
}

// TestTopAuditCommandLine: the commands are listed, suggested, completed
// and helped like the others, as the kubectl plugin too.
func TestTopAuditCommandLine(t *testing.T) {
	dead := fixtures.Kubeconfig(t, "https://127.0.0.1:1", "")
	tests := []apptest.Case{
		{Name: "the root's help lists them", Args: []string{"--help"},
			WantTextSub: []string{"  top         Show what each namespace, pod and claim is charged", "  audit       List the namespaces whose GPU usage is over a limit"}},
		{Name: "top's help has the connection flags", Args: []string{"top", "--help"}, WantTextSub: []string{"--what-if stringArray", "--kubeconfig string"}},
		{Name: "audit's help as the plugin", As: "kubectl gpuadmit", Args: []string{"audit", "--help"},
			WantTextSub: []string{"kubectl gpuadmit audit [--state STATE.yaml]", "  kubectl gpuadmit audit --state state.yaml -n team-a -o json"}},
		{Name: "a mistyped top", Args: []string{"tpo"}, WantCode: 2, WantErrSub: "Did you mean this?\n\ttop\n"},
		{Name: "a mistyped audit", Args: []string{"audti"}, WantCode: 2, WantErrSub: "Did you mean this?\n\taudit\n"},
		{Name: "a mistyped flag", Args: []string{"top", "--what-fi", "x"}, WantCode: 2, WantErrSub: "Did you mean this?\n\t--what-if\n"},
		{Name: "--sort-by completes", Args: []string{"__complete", "top", "--sort-by", ""},
			WantTextSub: []string{"used\nmemory\ngpu\ncores\npercent\nname\n:4\n"}, WantErrSub: "ShellCompDirectiveNoFileComp"},
		{Name: "audit's -o completes its formats", Args: []string{"__complete", "audit", "-o", ""},
			WantTextSub: []string{"table\njson\nyaml\njsonpath=\nname\ncustom-columns=\n:4\n"}, WantErrSub: "ShellCompDirectiveNoFileComp"},
		{Name: "commands complete", Args: []string{"__complete", "a"}, WantTextSub: []string{"audit\t"}, WantErrSub: "ShellCompDirective"},
		{Name: "top: no cluster answers", Args: []string{"top", "--kubeconfig", dead}, WantCode: 2,
			WantErrSub: `gpuadmit top: no cluster answers: the cluster of context "dead" at https://127.0.0.1:1 is not reachable`},
		{Name: "audit: no cluster answers", Args: []string{"audit", "--kubeconfig", dead}, WantCode: 2,
			WantErrSub: `gpuadmit audit: no cluster answers: the cluster of context "dead" at https://127.0.0.1:1 is not reachable`},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
