package app

import (
	"strings"
	"testing"
)

const seedNode = `"nodes":{"node1":{"devices":{"GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0":{
	"capacity":{"gpumem":24576,"gpucores":100},"used":{"gpu":1,"gpumem":%MEM%,"gpucores":0}}}}}`

func seedOutput(mem string) string {
	return `{"namespaces":{"team-a":{"used":{"gpu":1,"gpumem":` + mem + `,"gpucores":0},"limits":{"gpumem":24576},"pods":1,
		"quotas":{"gpu-quota":{"gpumem":24576}}}},` + strings.ReplaceAll(seedNode, "%MEM%", mem) + `}`
}

func TestUsageCommand(t *testing.T) {
	stateWithFactorQuota := `{"apiVersion":"v1","kind":"List","items":[
		{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ns"},"spec":{"hard":{"limits.nvidia.com/gpumem":"24"}}},
		{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpumem":"12"}}}]}}]}`
	tests := []cliCase{
		{name: "seed scenario 3: init running holds 20 GiB, not 30",
			args: []string{"usage", "-o", "json", "--state", "../../../examples/state/seed-init-running.yaml"}, wantOut: seedOutput("20480")},
		{name: "seed scenario 4: init finished, the app holds 10 GiB",
			args: []string{"usage", "-o", "json", "--state", "../../../examples/state/seed-init-done.yaml"}, wantOut: seedOutput("10240")},
		{name: "cluster: quotas, split devices, HAMi node, percentages, problems",
			args: []string{"usage", "-o", "json", "--state", "../../../examples/state/cluster.yaml"},
			wantOut: `{"namespaces":{
				"team-a":{"used":{"gpu":3,"gpumem":49152,"gpucores":50},"limits":{"gpu":4,"gpumem":65536,"gpucores":300},"pods":3,
					"quotas":{"gpu-large":{"gpu":8,"gpumem":131072,"gpucores":300},"gpu-small":{"gpu":4,"gpumem":65536}}},
				"team-b":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{"gpu":0,"gpucores":0},"pods":0,"quotas":{"no-gpus":{"gpu":0,"gpucores":0}}}},
			"nodes":{
				"node-a":{"devices":{
					"GPU-a1":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":30720,"gpucores":50}},
					"GPU-a2":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":20480,"gpucores":30}}}},
				"node-h":{"devices":{"GPU-h1":{"capacity":{"gpumem":16384,"gpucores":100},"used":{"gpu":1,"gpumem":8192,"gpucores":0}}}}},
			"problems":[
				"node node-x: gpuadmit.io/gpu-devices \"[{\\\"uuid\\\":\\\"GPU-x1\\\",\\\"memoryMiB\\\":\": node has no known GPU devices: gpuadmit.io/gpu-devices: not a JSON array of objects: unexpected EOF",
				"pod team-b/broken: invalid GPU request: container \"app\": nvidia.com/gpu \"1500m\": must be a whole number",
				"quota team-b/no-gpus: limits.nvidia.com/gpucores \"1500m\": must be a whole number; the limit blocks until it is fixed"]}`,
			wantErrSub: "gpuadmit usage: warning: pod team-b/broken: invalid GPU request"},
		{name: "standard input, memory factor applied once to requests and quota",
			args:  []string{"usage", "-o", "json", "--state", "-", "--config", "../../../examples/config/memory-factor-1024.yaml"},
			stdin: stateWithFactorQuota,
			wantOut: `{"namespaces":{"ns":{"used":{"gpu":1,"gpumem":12288,"gpucores":0},"limits":{"gpumem":24576},"pods":1,
				"quotas":{"q":{"gpumem":24576}}}},"nodes":{}}`,
			wantErrSub: "gpuadmit usage: configuration from --config ../../../examples/config/memory-factor-1024.yaml\n"},
		{name: "only nodes", args: []string{"usage", "-o", "json", "--state", "-"},
			stdin:   "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-node\n  annotations:\n    gpuadmit.io/gpu-devices: '[{\"uuid\":\"GPU-1\",\"memoryMiB\":1000}]'\n",
			wantOut: `{"namespaces":{},"nodes":{"gpu-node":{"devices":{"GPU-1":{"capacity":{"gpumem":1000,"gpucores":100},"used":{"gpu":0,"gpumem":0,"gpucores":0}}}}}}`},
		{name: "-n: that namespace alone, its problems and the nodes'",
			args: []string{"usage", "-o", "json", "--state", "../../../examples/state/cluster.yaml", "-n", "team-b"},
			wantOut: `{"namespaces":{
				"team-b":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{"gpu":0,"gpucores":0},"pods":0,"quotas":{"no-gpus":{"gpu":0,"gpucores":0}}}},
			"nodes":{
				"node-a":{"devices":{
					"GPU-a1":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":30720,"gpucores":50}},
					"GPU-a2":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":20480,"gpucores":30}}}},
				"node-h":{"devices":{"GPU-h1":{"capacity":{"gpumem":16384,"gpucores":100},"used":{"gpu":1,"gpumem":8192,"gpucores":0}}}}},
			"problems":[
				"node node-x: gpuadmit.io/gpu-devices \"[{\\\"uuid\\\":\\\"GPU-x1\\\",\\\"memoryMiB\\\":\": node has no known GPU devices: gpuadmit.io/gpu-devices: not a JSON array of objects: unexpected EOF",
				"pod team-b/broken: invalid GPU request: container \"app\": nvidia.com/gpu \"1500m\": must be a whole number",
				"quota team-b/no-gpus: limits.nvidia.com/gpucores \"1500m\": must be a whole number; the limit blocks until it is fixed"]}`,
			wantErrSub: "gpuadmit usage: warning: pod team-b/broken: invalid GPU request"},
		{name: "--namespace of a namespace without GPU pods or quotas: zero, no limits",
			args: []string{"usage", "-o", "json", "--state", "../../../examples/state/cluster.yaml", "--namespace", "team-c"},
			wantOut: `{"namespaces":{"team-c":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"pods":0}},
			"nodes":{
				"node-a":{"devices":{
					"GPU-a1":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":30720,"gpucores":50}},
					"GPU-a2":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":20480,"gpucores":30}}}},
				"node-h":{"devices":{"GPU-h1":{"capacity":{"gpumem":16384,"gpucores":100},"used":{"gpu":1,"gpumem":8192,"gpucores":0}}}}},
			"problems":[
				"node node-x: gpuadmit.io/gpu-devices \"[{\\\"uuid\\\":\\\"GPU-x1\\\",\\\"memoryMiB\\\":\": node has no known GPU devices: gpuadmit.io/gpu-devices: not a JSON array of objects: unexpected EOF"]}`,
			wantErrSub: "gpuadmit usage: warning: node node-x"},
		{name: "no --state reads the cluster: no kubeconfig", args: []string{"usage", "--kubeconfig", "nope.kubeconfig"},
			wantCode: 2, wantErrSub: "gpuadmit usage: no --state given, reading the kubeconfig: stat nope.kubeconfig: no such file"},
		{name: "extra argument", args: []string{"usage", "--state", "x", "y"}, wantCode: 2,
			wantErrSub: `gpuadmit usage: unexpected argument "y"; usage: gpuadmit usage [--state STATE.yaml]`},
		{name: "missing file", args: []string{"usage", "--state", "nope.yaml"}, wantCode: 2, wantErrSub: "open nope.yaml: no such file"},
		{name: "garbage input", args: []string{"usage", "--state", "-"}, stdin: "{{{", wantCode: 2, wantErrSub: "document 1: not valid YAML or JSON"},
		{name: "nothing usable in the state", args: []string{"usage", "--state", "-"}, stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
			wantCode: 2, wantErrSub: "-: no Pod, Node, ResourceQuota, Namespace, ResourceClaim, ResourceClaimTemplate, ResourceSlice or DeviceClass found (1 other objects)"},
		{name: "unparsable quota value", args: []string{"usage", "--state", "-"},
			stdin:    "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: a}\nspec: {hard: {limits.nvidia.com/gpu: lots}}\n",
			wantCode: 2, wantErrSub: "(ResourceQuota a/q)"},
		{name: "bad config", args: []string{"usage", "--state", "../../../examples/state/seed-init-done.yaml", "--config", "../../../examples/pods/invalid.yaml"},
			wantCode: 2, wantErrSub: `apiVersion "v1", kind "Pod": want apiVersion config.gpuadmit.io/v1alpha1, kind Configuration`},
		{name: "unknown flag", args: []string{"usage", "-f", "x"}, wantCode: 2, wantErrSub: "unknown shorthand flag: 'f' in -f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
