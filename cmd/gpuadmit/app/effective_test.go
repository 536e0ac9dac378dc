package app

import (
	"testing"
)

func TestEffectiveCommand(t *testing.T) {
	tests := []cliCase{
		{name: "seed scenario 1", args: []string{"effective", "-o", "json", "-f", "../../../examples/pods/scenario1-init30-app4.yaml"},
			wantOut: `{"effective":{"gpu":1,"gpumem":30720,"gpucores":0},"containers":[
				{"name":"convert-weights","role":"init","gpu":1,"gpumem":30720,"gpucores":0},
				{"name":"server","role":"app","gpu":1,"gpumem":4096,"gpucores":0}],"unresolved":[]}`},
		{name: "seed scenario 2", args: []string{"effective", "-o", "json", "-f", "../../../examples/pods/scenario2-init20-app10.yaml"},
			wantOut: `{"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"containers":[
				{"name":"convert-weights","role":"init","gpu":1,"gpumem":20480,"gpucores":0},
				{"name":"server","role":"app","gpu":1,"gpumem":10240,"gpucores":0}],"unresolved":[]}`},
		{name: "sidecar", args: []string{"effective", "-o", "json", "--f", "../../../examples/pods/sidecar.yaml"},
			wantOut: `{"effective":{"gpu":2,"gpumem":14336,"gpucores":0},"containers":[
				{"name":"metrics-proxy","role":"sidecar","gpu":1,"gpumem":2048,"gpucores":0},
				{"name":"prepare","role":"init","gpu":1,"gpumem":12288,"gpucores":0},
				{"name":"app","role":"app","gpu":1,"gpumem":8192,"gpucores":0}],"unresolved":[]}`},
		{name: "memory factor from a HAMi config, applied once",
			args:  []string{"effective", "-o", "json", "-f", "-", "--config", "../../../examples/config/memory-factor-1024.yaml"},
			stdin: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2","nvidia.com/gpumem":"20"}}}]}}`,
			wantOut: `{"effective":{"gpu":2,"gpumem":40960,"gpucores":0},"containers":[
				{"name":"c","role":"app","gpu":2,"gpumem":40960,"gpucores":0}],"unresolved":[]}`},
		{name: "percentage unresolved", args: []string{"effective", "-o", "json", "-f", "../../../examples/pods/percentage.yaml"},
			wantOut: `{"effective":{"gpu":1,"gpumem":0,"gpucores":0},"containers":[{"name":"notebook","role":"app","gpu":1,"gpumem":0,"gpucores":0}],
				"unresolved":["container \"notebook\": memory is 50% of a device whose size is unknown (pass --device-memory MiB); its gpumem is not counted"]}`},
		{name: "percentage resolved", args: []string{"effective", "-o", "json", "-f", "../../../examples/pods/percentage.yaml", "--device-memory", "24576"},
			wantOut: `{"effective":{"gpu":1,"gpumem":12288,"gpucores":0},"containers":[{"name":"notebook","role":"app","gpu":1,"gpumem":12288,"gpucores":0}],"unresolved":[]}`},
		{name: "every object of a multi-document stream", args: []string{"effective", "-o", "json", "-f", "-"},
			stdin: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: first}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 100}}}]}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: second}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 999}}}]}\n",
			wantOut: `{"objects":[
				{"kind":"Pod","name":"first","replicas":1,"effective":{"gpu":1,"gpumem":100,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":100,"gpucores":0}],"unresolved":[]},
				{"kind":"Pod","name":"second","replicas":1,"effective":{"gpu":1,"gpumem":999,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":999,"gpucores":0}],"unresolved":[]}]}`},
		{name: "invalid request", args: []string{"effective", "-f", "../../../examples/pods/invalid.yaml"}, wantCode: 2,
			wantErrSub: `gpuadmit effective: Pod "broken": invalid GPU request: container "app": nvidia.com/gpumem "1500m": must be a whole number; container "app": nvidia.com/gpucores "150": must be within 0..100`},
		{name: "missing file", args: []string{"effective", "-f", "nope.yaml"}, wantCode: 2, wantErrSub: "open nope.yaml: no such file"},
		{name: "no pod in input", args: []string{"effective", "-f", "-"}, stdin: "apiVersion: v1\nkind: Node\nmetadata: {name: node1}\n",
			wantCode: 2, wantErrSub: "-: no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found"},
		{name: "garbage input", args: []string{"effective", "-f", "-"}, stdin: "{{{", wantCode: 2, wantErrSub: "document 1: not valid YAML or JSON"},
		{name: "bad config", args: []string{"effective", "-f", "../../../examples/pods/scenario2-init20-app10.yaml", "--config", "../../../examples/pods/invalid.yaml"},
			wantCode: 2, wantErrSub: `apiVersion "v1", kind "Pod": want apiVersion config.gpuadmit.io/v1alpha1, kind Configuration`},
		// HAMi pkg/device/ascend GenerateResourceRequests: 20000 MiB rounds up to the 910B2's vir12_3c_32g template (32768).
		{name: "a pod of an NVIDIA GPU and an Ascend NPU is charged to both families",
			args:       []string{"effective", "-o", "json", "-f", "../../../examples/pods/ascend-910b2-and-nvidia.yaml", "--config", "../../../pkg/config/testdata/hami-chart-rendered.yaml"},
			wantErrSub: "config keys gpuadmit does not read (ignored): metax.sgpuTopologyAware, nvidia.deviceCoreScaling,",
			wantOut: `{"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"containers":[
				{"name":"convert","role":"init","gpu":1,"gpumem":8192,"gpucores":0},
				{"name":"serve","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],
				"families":{"ascend-910B2":{"effective":{"gpu":1,"gpumem":32768,"gpucores":0},
				"containers":[{"name":"serve","role":"app","family":"ascend-910B2","gpu":1,"gpumem":32768,"gpucores":0}],"unresolved":[]}}}`},
		{name: "HAMi's chart-rendered device config loads, one warning line names the ignored keys",
			args:       []string{"effective", "-o", "json", "-f", "../../../examples/pods/scenario2-init20-app10.yaml", "--config", "../../../pkg/config/testdata/hami-chart-v2.10.yaml"},
			wantErrSub: "gpuadmit: warning: ../../../pkg/config/testdata/hami-chart-v2.10.yaml: config keys gpuadmit does not read (ignored): metax.sgpuTopologyAware, mthreads.memoryPerCard, nvidia.deviceCoreScaling,",
			wantOut: `{"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"containers":[
				{"name":"convert-weights","role":"init","gpu":1,"gpumem":20480,"gpucores":0},
				{"name":"server","role":"app","gpu":1,"gpumem":10240,"gpucores":0}],"unresolved":[]}`},
		{name: "quantities in the forms the API server canonicalises",
			args:    []string{"effective", "-o", "json", "-f", "../../../examples/pods/quantity-forms.yaml"},
			wantOut: `{"effective":{"gpu":1,"gpumem":16384,"gpucores":1},"containers":[{"name":"app","role":"app","gpu":1,"gpumem":16384,"gpucores":1}],"unresolved":[]}`},
		{name: "an invalid value is shown as written", args: []string{"effective", "-f", "-"}, wantCode: 2,
			stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"1.5\", nvidia.com/gpumem: 99E}}}]}\n",
			wantErrSub: `container "c": nvidia.com/gpu "1.5": must be a whole number; container "c": nvidia.com/gpumem "99E": does not fit in a 64-bit integer`},
		{name: "a Deployment: the pod template", args: []string{"effective", "-o", "json", "-f", "../../../examples/workloads/deployment-4x8g.yaml"},
			wantOut: `{"objects":[{"kind":"Deployment","namespace":"team-a","name":"vllm","replicas":4,"effective":{"gpu":1,"gpumem":8192,"gpucores":0},
				"containers":[{"name":"server","role":"app","gpu":1,"gpumem":8192,"gpucores":0}],"unresolved":[]}]}`},
		{name: "no -f", args: []string{"effective"}, wantCode: 2, wantErrSub: "usage: gpuadmit effective -f POD.yaml"},
		{name: "negative device memory", args: []string{"effective", "-f", "x", "--device-memory", "-1"}, wantCode: 2, wantErrSub: "--device-memory must be >= 0"},
		{name: "unknown flag", args: []string{"effective", "--bogus"}, wantCode: 2, wantErrSub: "gpuadmit effective: unknown flag: --bogus"},
		{name: "unknown command", args: []string{"effectiv"}, wantCode: 2, wantErrSub: `unknown command "effectiv"`},
		{name: "no command", args: nil, wantCode: 2, wantErrSub: "Usage:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
