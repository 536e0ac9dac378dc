package app_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
)

func TestTables(t *testing.T) {
	tests := []apptest.Case{
		{Name: "usage: namespaces used/limit, '-' without a limit; devices used/capacity",
			Args: []string{"usage", "--state", state + "cluster.yaml", "-o", "table"},
			WantText: `NAMESPACE   PODS   GPU   GPUMEM(MiB)   GPUCORES
team-a      3      3/4   49152/65536   50/300
team-b      0      0/0   0/-           0/1

NODE     DEVICE   GPU   GPUMEM(MiB)   GPUCORES
node-a   GPU-a1   1     30720/40960   50/100
node-a   GPU-a2   1     20480/40960   30/100
node-h   GPU-h1   1     8192/16384    0/100
`,
			WantErrSub: "gpuadmit usage: warning: pod team-b/broken: invalid GPU request"},
		{Name: "usage: unresolved memory percentages are warnings",
			Args:       []string{"usage", "--state", "-", "-o", "table"},
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: nb, namespace: ns}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 50}}}]}\n",
			WantText:   "NAMESPACE   PODS   GPU   GPUMEM(MiB)   GPUCORES\nns          1      1/-   0/-           0/-\n",
			WantErrSub: `gpuadmit usage: warning: namespace ns: pod nb: containers ["c"]: memory is a percentage of a device of unknown size; not counted in used.gpumem`},
		{Name: "usage -n: one namespace; nodes only when there are GPU nodes",
			Args: []string{"usage", "--state", "-", "-n", "ns", "-o", "table"},
			Stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n" +
				"spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2, nvidia.com/gpumem: 3000, nvidia.com/gpucores: 30}}}]}\n",
			WantText: "NAMESPACE   PODS   GPU   GPUMEM(MiB)   GPUCORES\nns          1      2/-   6000/-        60/-\n"},
		{Name: "eval: a row per object, then its denials",
			Args: []string{"eval", "-f", "../../../examples/workloads/deployment-4x8g.yaml", "--state", state + "idle-a10-quota24g.yaml", "-o", "table"}, WantCode: 1,
			WantText: `KIND         NAMESPACE   NAME   ALLOWED   ADMITTED   GPU   GPUMEM(MiB)   GPUCORES
Deployment   team-a      vllm   false     3/4        1     8192          0

Deployment team-a/vllm denied: gpuadmit: Deployment team-a/vllm can never run whole: 4 pods x 8192 MiB = 32768 MiB of nvidia.com/gpumem, over the limit 24576 MiB of ResourceQuota gpu-quota
Deployment team-a/vllm denied: namespace "team-a": nvidia.com/gpumem: pod needs 8192 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)
`},
		{Name: "eval: the namespace decided in, and warnings",
			Args: []string{"eval", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-done.yaml", "-o", "table"},
			WantText: `KIND   NAMESPACE   NAME        ALLOWED   ADMITTED   GPU   GPUMEM(MiB)   GPUCORES
Pod    team-a      small-job   true      1/1        1     12288         0

Pod team-a/small-job warning: namespace "team-a": nvidia.com/gpumem will be at 91 % of its limit after this pod (22528 of 24576 MiB, ResourceQuota "gpu-quota")
`},
		{Name: "eval: a pod with no namespace is decided in default",
			Args:  []string{"eval", "-f", "-", "--state", state + "seed-init-done.yaml", "-o", "table"},
			Stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]}\n",
			WantText: "KIND   NAMESPACE   NAME   ALLOWED   ADMITTED   GPU   GPUMEM(MiB)   GPUCORES\n" +
				"Pod    default     p      true      1/1        1     1024          0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
