package eval_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// The example policy library (examples/policy) and its cluster: namespaces
// with the labels the policies read, nodes with A10s, L4s and H200s.
const (
	library      = "../../../../examples/policy"
	libraryState = "../../../../examples/policy/testdata/state.yaml"
	// libraryLine is what eval says it decides with, given --policy library.
	libraryLine = "gpuadmit eval: configuration: the defaults; policies: built-in + --policy ../../../../examples/policy\n"
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

// wholeH200Deployment is wholeH200's pod as a Deployment's template.
const wholeH200Deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: team-a}
spec:
  replicas: 1
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big, cost-center: "42"}}
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
	tests := []apptest.Case{
		{Name: "a whole H200 for someone outside ml-leads: denied", Stdin: wholeH200, Args: eval(wholeH200, "--as", "bob", "--as-group", "developers"),
			WantCode: 1, WantTextSub: []string{`"allowed": false`, `books 1 whole NVIDIA-H200 device(s); only members of group \"ml-leads\" may (user \"bob\" is not)`}, WantErrSub: libraryLine},
		{Name: "a whole H200 for a member of ml-leads: allowed", Stdin: wholeH200, Args: eval(wholeH200, "--as", "alice", "--as-group", "ml-leads"),
			WantTextSub: []string{`"allowed": true`}, WantErrSub: libraryLine},
		{Name: "a Deployment's pods are decided as the controller that creates them, whoever applies it", Stdin: wholeH200Deployment,
			Args: eval(wholeH200Deployment, "--as", "alice", "--as-group", "ml-leads"), WantCode: 1,
			WantTextSub: []string{`(user \"system:serviceaccount:kube-system:replicaset-controller\" is not)`}, WantErrSub: libraryLine},
		{Name: "--as-requester decides them as the requesting user", Stdin: wholeH200Deployment,
			Args:        eval(wholeH200Deployment, "--as", "alice", "--as-group", "ml-leads", "--as-requester"),
			WantTextSub: []string{`"allowed": true`}, WantErrSub: libraryLine},
		{Name: "with --state and no --as, nobody asks", Stdin: wholeH200, Args: eval(wholeH200),
			WantCode: 1, WantTextSub: []string{`(user \"\" is not)`}, WantErrSub: libraryLine},
		{Name: "--as-group needs --as", Stdin: wholeH200, Args: eval(wholeH200, "--as-group", "ml-leads"),
			WantCode: 2, WantErrSub: "--as-group needs --as"},
		{Name: "the namespace's labels come from the state", Stdin: twoGPUs, Args: eval(twoGPUs),
			WantCode: 1, WantTextSub: []string{`pod needs 2 GPUs, namespace label gpu-tier=\"bronze\" allows at most 1 per pod`}, WantErrSub: libraryLine},
		{Name: "--explain names the rule, file and line, as JSON", Stdin: twoGPUs, Args: eval(twoGPUs, "--explain"),
			WantCode: 1, WantTextSub: []string{`"explanation": {`, `"message": "namespace \"bronze-ns\": pod \"pair\": pod needs 2 GPUs`,
				`"rule": "data.gpuadmit.admission.deny",`, `"file": "../../../../examples/policy/gpu-tier-cap.rego",`, `"line": 13`, `"limits": []`}, WantErrSub: libraryLine},
		{Name: "--explain as a table", Stdin: twoGPUs, Args: eval(twoGPUs, "--explain", "-o", "table"),
			WantCode: 1, WantTextSub: []string{"Pod bronze-ns/pair explained:\n  denied: namespace \"bronze-ns\": pod \"pair\": pod needs 2 GPUs",
				"    by  data.gpuadmit.admission.deny at ../../../../examples/policy/gpu-tier-cap.rego:13\n",
				"  no ResourceQuota limits a managed resource in this namespace"}, WantErrSub: libraryLine},
		{Name: "--explain shows the limits against the usage after the pod", Stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: team-a}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 30720}}}]\n",
			Args: []string{"eval", "-f", "-", "--state", fixtures.State + "idle-a10-quota24g.yaml", "--explain", "-o", "table"}, WantCode: 1,
			WantTextSub: []string{"    by  data.gpuadmit.builtin.deny at embedded/limits.rego:23\n",
				`  limit nvidia.com/gpumem: 0 used + 0 reserved + 30720 this pod = 30720 of 24576 (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem): EXCEEDED`}},
		{Name: "a namespace missing from the state is a warning", Stdin: strings.Replace(twoGPUs, "bronze-ns", "team-z", 1), Args: eval(twoGPUs),
			WantCode: 0, WantTextSub: []string{`"allowed": true`}, WantErrSub: `warning: namespace "team-z" is not in the state: the policies see no namespace labels`},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
