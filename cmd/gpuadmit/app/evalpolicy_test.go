package app

import "testing"

// The example policy library (examples/policy) and its cluster: namespaces
// with the labels the policies read, nodes with A10s, L4s and H200s.
const (
	library      = "../../../examples/policy"
	libraryState = "../../../examples/policy/testdata/state.yaml"
	// libraryLine is what eval says it decides with, given --policy library.
	libraryLine = "gpuadmit eval: configuration: the defaults; policies: built-in + --policy ../../../examples/policy\n"
)

// wholeH200 books one whole H200 card in team-a, with the labels the
// library requires.
const wholeH200 = `apiVersion: v1
kind: Pod
metadata: {name: big, namespace: team-a, labels: {cost-center: "42"}}
spec:
  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
`

// twoGPUs asks two A10 shares in bronze-ns (gpu-tier: bronze).
const twoGPUs = `apiVersion: v1
kind: Pod
metadata: {name: pair, namespace: bronze-ns, labels: {cost-center: "42"}}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2, nvidia.com/gpumem: 1024}}}]
`

// TestEvalPolicyInputs: eval gives the policies the pod's labels and
// nodeSelector, the namespace's labels from the state, and the user of
// --as and --as-group (plus system:authenticated, as the API server adds
// it); --explain names the rule behind each message.
func TestEvalPolicyInputs(t *testing.T) {
	eval := func(stdin string, extra ...string) []string {
		return append([]string{"eval", "-o", "json", "-f", "-", "--state", libraryState, "--policy", library}, extra...)
	}
	tests := []cliCase{
		{name: "a whole H200 for someone outside ml-leads: denied", stdin: wholeH200, args: eval(wholeH200, "--as", "bob", "--as-group", "developers"),
			wantCode: 1, wantTextSub: []string{`"allowed": false`, `books 1 whole NVIDIA-H200 device(s); only members of group \"ml-leads\" may (user \"bob\" is not)`}, wantErrSub: libraryLine},
		{name: "a whole H200 for a member of ml-leads: allowed", stdin: wholeH200, args: eval(wholeH200, "--as", "alice", "--as-group", "ml-leads"),
			wantTextSub: []string{`"allowed": true`}, wantErrSub: libraryLine},
		{name: "with --state and no --as, nobody asks", stdin: wholeH200, args: eval(wholeH200),
			wantCode: 1, wantTextSub: []string{`(user \"\" is not)`}, wantErrSub: libraryLine},
		{name: "--as-group needs --as", stdin: wholeH200, args: eval(wholeH200, "--as-group", "ml-leads"),
			wantCode: 2, wantErrSub: "--as-group needs --as"},
		{name: "the namespace's labels come from the state", stdin: twoGPUs, args: eval(twoGPUs),
			wantCode: 1, wantTextSub: []string{`pod needs 2 GPUs, namespace label gpu-tier=\"bronze\" allows at most 1 per pod`}, wantErrSub: libraryLine},
		{name: "--explain names the rule, file and line, as JSON", stdin: twoGPUs, args: eval(twoGPUs, "--explain"),
			wantCode: 1, wantTextSub: []string{`"explanation": {`, `"message": "namespace \"bronze-ns\": pod \"pair\": pod needs 2 GPUs`,
				`"rule": "data.gpuadmit.admission.deny",`, `"file": "../../../examples/policy/gpu-tier-cap.rego",`, `"line": 13`, `"limits": []`}, wantErrSub: libraryLine},
		{name: "--explain as a table", stdin: twoGPUs, args: eval(twoGPUs, "--explain", "-o", "table"),
			wantCode: 1, wantTextSub: []string{"Pod bronze-ns/pair explained:\n  denied: namespace \"bronze-ns\": pod \"pair\": pod needs 2 GPUs",
				"    by  data.gpuadmit.admission.deny at ../../../examples/policy/gpu-tier-cap.rego:13\n",
				"  no ResourceQuota limits a managed resource in this namespace"}, wantErrSub: libraryLine},
		{name: "--explain shows the limits against the usage after the pod", stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: team-a}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 30720}}}]\n",
			args: []string{"eval", "-f", "-", "--state", state + "idle-a10-quota24g.yaml", "--explain", "-o", "table"}, wantCode: 1,
			wantTextSub: []string{"    by  data.gpuadmit.builtin.deny at embedded/limits.rego:15\n",
				`  limit nvidia.com/gpumem: 0 used + 0 reserved + 30720 this pod = 30720 of 24576 (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem): EXCEEDED`}},
		{name: "a namespace missing from the state is a warning", stdin: twoGPUs, args: eval(twoGPUs, "-n", "team-z"),
			wantCode: 0, wantTextSub: []string{`"allowed": true`}, wantErrSub: `warning: namespace "team-z" is not in the state: the policies see no namespace labels`},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
