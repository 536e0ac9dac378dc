package usage_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
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
	tests := []apptest.Case{
		{Name: "seed scenario 3: init running holds 20 GiB, not 30",
			Args: []string{"usage", "-o", "json", "--state", "../../../../examples/state/seed-init-running.yaml"}, WantOut: seedOutput("20480")},
		{Name: "seed scenario 4: init finished, the app holds 10 GiB",
			Args: []string{"usage", "-o", "json", "--state", "../../../../examples/state/seed-init-done.yaml"}, WantOut: seedOutput("10240")},
		{Name: "cluster: quotas, split devices, HAMi node, percentages, problems",
			Args: []string{"usage", "-o", "json", "--state", "../../../../examples/state/cluster.yaml"},
			WantOut: `{"namespaces":{
				"team-a":{"used":{"gpu":3,"gpumem":49152,"gpucores":50},"limits":{"gpu":4,"gpumem":65536,"gpucores":300},"pods":3,
					"quotas":{"gpu-large":{"gpu":8,"gpumem":131072,"gpucores":300},"gpu-small":{"gpu":4,"gpumem":65536}}},
				"team-b":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{"gpu":0,"gpucores":1},"pods":0,"quotas":{"no-gpus":{"gpu":0,"gpucores":1}}}},
			"nodes":{
				"node-a":{"devices":{
					"GPU-a1":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":30720,"gpucores":50}},
					"GPU-a2":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":20480,"gpucores":30}}}},
				"node-h":{"devices":{"GPU-h1":{"capacity":{"gpumem":16384,"gpucores":100},"used":{"gpu":1,"gpumem":8192,"gpucores":0}}}}},
			"problems":[
				"node node-x: gpuadmit.io/gpu-devices \"[{\\\"uuid\\\":\\\"GPU-x1\\\",\\\"memoryMiB\\\":\": node has no known GPU devices: gpuadmit.io/gpu-devices: not a JSON array of objects: unexpected EOF",
				"pod team-b/broken: invalid GPU request: container \"app\": nvidia.com/gpu \"1500m\": must be a whole number",
				"quota team-b/no-gpus: limits.nvidia.com/gpucores \"1.5\": not a whole number: enforced as 1 (rounded down, never more than written); write a whole number"]}`,
			WantErrSub: "gpuadmit usage: warning: pod team-b/broken: invalid GPU request"},
		{Name: "standard input, memory factor applied once to requests and quota",
			Args:  []string{"usage", "-o", "json", "--state", "-", "--config", "../../../../examples/config/memory-factor-1024.yaml"},
			Stdin: stateWithFactorQuota,
			WantOut: `{"namespaces":{"ns":{"used":{"gpu":1,"gpumem":12288,"gpucores":0},"limits":{"gpumem":24576},"pods":1,
				"quotas":{"q":{"gpumem":24576}}}},"nodes":{}}`,
			WantErrSub: "gpuadmit usage: configuration from --config ../../../../examples/config/memory-factor-1024.yaml\n"},
		{Name: "only nodes", Args: []string{"usage", "-o", "json", "--state", "-"},
			Stdin:   "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-node\n  annotations:\n    gpuadmit.io/gpu-devices: '[{\"uuid\":\"GPU-1\",\"memoryMiB\":1000}]'\n",
			WantOut: `{"namespaces":{},"nodes":{"gpu-node":{"devices":{"GPU-1":{"capacity":{"gpumem":1000,"gpucores":100},"used":{"gpu":0,"gpumem":0,"gpucores":0}}}}}}`},
		{Name: "-n: that namespace alone, its problems and the nodes'",
			Args: []string{"usage", "-o", "json", "--state", "../../../../examples/state/cluster.yaml", "-n", "team-b"},
			WantOut: `{"namespaces":{
				"team-b":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{"gpu":0,"gpucores":1},"pods":0,"quotas":{"no-gpus":{"gpu":0,"gpucores":1}}}},
			"nodes":{
				"node-a":{"devices":{
					"GPU-a1":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":30720,"gpucores":50}},
					"GPU-a2":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":20480,"gpucores":30}}}},
				"node-h":{"devices":{"GPU-h1":{"capacity":{"gpumem":16384,"gpucores":100},"used":{"gpu":1,"gpumem":8192,"gpucores":0}}}}},
			"problems":[
				"node node-x: gpuadmit.io/gpu-devices \"[{\\\"uuid\\\":\\\"GPU-x1\\\",\\\"memoryMiB\\\":\": node has no known GPU devices: gpuadmit.io/gpu-devices: not a JSON array of objects: unexpected EOF",
				"pod team-b/broken: invalid GPU request: container \"app\": nvidia.com/gpu \"1500m\": must be a whole number",
				"quota team-b/no-gpus: limits.nvidia.com/gpucores \"1.5\": not a whole number: enforced as 1 (rounded down, never more than written); write a whole number"]}`,
			WantErrSub: "gpuadmit usage: warning: pod team-b/broken: invalid GPU request"},
		{Name: "--namespace of a namespace without GPU pods or quotas: zero, no limits",
			Args: []string{"usage", "-o", "json", "--state", "../../../../examples/state/cluster.yaml", "--namespace", "default"},
			WantOut: `{"namespaces":{"default":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"pods":0}},
			"nodes":{
				"node-a":{"devices":{
					"GPU-a1":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":30720,"gpucores":50}},
					"GPU-a2":{"capacity":{"gpumem":40960,"gpucores":100},"used":{"gpu":1,"gpumem":20480,"gpucores":30}}}},
				"node-h":{"devices":{"GPU-h1":{"capacity":{"gpumem":16384,"gpucores":100},"used":{"gpu":1,"gpumem":8192,"gpucores":0}}}}},
			"problems":[
				"node node-x: gpuadmit.io/gpu-devices \"[{\\\"uuid\\\":\\\"GPU-x1\\\",\\\"memoryMiB\\\":\": node has no known GPU devices: gpuadmit.io/gpu-devices: not a JSON array of objects: unexpected EOF"]}`,
			WantErrSub: "gpuadmit usage: warning: node node-x"},
		{Name: "no --state reads the cluster: no kubeconfig", Args: []string{"usage", "--kubeconfig", "nope.kubeconfig"},
			WantCode: 2, WantErrSub: "gpuadmit usage: no --state given, reading the kubeconfig: stat nope.kubeconfig: no such file"},
		{Name: "extra argument", Args: []string{"usage", "--state", "x", "y"}, WantCode: 2,
			WantErrSub: `gpuadmit usage: unexpected argument "y"; usage: gpuadmit usage [--state STATE.yaml]`},
		{Name: "missing file", Args: []string{"usage", "--state", "nope.yaml"}, WantCode: 2, WantErrSub: "open nope.yaml: no such file"},
		{Name: "garbage input", Args: []string{"usage", "--state", "-"}, Stdin: "{{{", WantCode: 2, WantErrSub: "document 1: not valid YAML or JSON"},
		{Name: "nothing usable in the state", Args: []string{"usage", "--state", "-"}, Stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
			WantCode: 2, WantErrSub: "-: no Pod, Node, ResourceQuota, Namespace, ResourceClaim, ResourceClaimTemplate, ResourceSlice or DeviceClass found (1 other objects)"},
		{Name: "unparsable quota value", Args: []string{"usage", "--state", "-"},
			Stdin:    "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: a}\nspec: {hard: {limits.nvidia.com/gpu: lots}}\n",
			WantCode: 2, WantErrSub: "(ResourceQuota a/q)"},
		{Name: "bad config", Args: []string{"usage", "--state", "../../../../examples/state/seed-init-done.yaml", "--config", "../../../../examples/pods/invalid.yaml"},
			WantCode: 2, WantErrSub: `apiVersion "v1", kind "Pod": want apiVersion config.gpuadmit.io/v1alpha1, kind Configuration`},
		{Name: "unknown flag", Args: []string{"usage", "-f", "x"}, WantCode: 2, WantErrSub: "unknown shorthand flag: 'f' in -f"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
