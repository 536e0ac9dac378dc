package effective_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
)

func TestEffectiveCommand(t *testing.T) {
	tests := []apptest.Case{
		{Name: "seed scenario 1", Args: []string{"effective", "-o", "json", "-f", "../../../../examples/pods/scenario1-init30-app4.yaml"},
			WantOut: `{"effective":{"gpu":1,"gpumem":30720,"gpucores":0},"containers":[
				{"name":"convert-weights","role":"init","gpu":1,"gpumem":30720,"gpucores":0},
				{"name":"server","role":"app","gpu":1,"gpumem":4096,"gpucores":0}],"unresolved":[]}`},
		{Name: "seed scenario 2", Args: []string{"effective", "-o", "json", "-f", "../../../../examples/pods/scenario2-init20-app10.yaml"},
			WantOut: `{"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"containers":[
				{"name":"convert-weights","role":"init","gpu":1,"gpumem":20480,"gpucores":0},
				{"name":"server","role":"app","gpu":1,"gpumem":10240,"gpucores":0}],"unresolved":[]}`},
		{Name: "sidecar", Args: []string{"effective", "-o", "json", "--f", "../../../../examples/pods/sidecar.yaml"},
			WantOut: `{"effective":{"gpu":2,"gpumem":14336,"gpucores":0},"containers":[
				{"name":"metrics-proxy","role":"sidecar","gpu":1,"gpumem":2048,"gpucores":0},
				{"name":"prepare","role":"init","gpu":1,"gpumem":12288,"gpucores":0},
				{"name":"app","role":"app","gpu":1,"gpumem":8192,"gpucores":0}],"unresolved":[]}`},
		{Name: "memory factor from a HAMi config, applied once",
			Args:  []string{"effective", "-o", "json", "-f", "-", "--config", "../../../../examples/config/memory-factor-1024.yaml"},
			Stdin: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2","nvidia.com/gpumem":"20"}}}]}}`,
			WantOut: `{"effective":{"gpu":2,"gpumem":40960,"gpucores":0},"containers":[
				{"name":"c","role":"app","gpu":2,"gpumem":40960,"gpucores":0}],"unresolved":[]}`},
		{Name: "percentage unresolved", Args: []string{"effective", "-o", "json", "-f", "../../../../examples/pods/percentage.yaml"},
			WantOut: `{"effective":{"gpu":1,"gpumem":0,"gpucores":0},"containers":[{"name":"notebook","role":"app","gpu":1,"gpumem":0,"gpucores":0}],
				"unresolved":["container \"notebook\": memory is 50% of a device whose size is unknown (pass --device-memory MiB); its gpumem is not counted"]}`},
		{Name: "percentage resolved", Args: []string{"effective", "-o", "json", "-f", "../../../../examples/pods/percentage.yaml", "--device-memory", "24576"},
			WantOut: `{"effective":{"gpu":1,"gpumem":12288,"gpucores":0},"containers":[{"name":"notebook","role":"app","gpu":1,"gpumem":12288,"gpucores":0}],"unresolved":[]}`},
		{Name: "every object of a multi-document stream", Args: []string{"effective", "-o", "json", "-f", "-"},
			Stdin: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: first}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 100}}}]}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: second}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 999}}}]}\n",
			WantOut: `{"objects":[
				{"kind":"Pod","name":"first","replicas":1,"effective":{"gpu":1,"gpumem":100,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":100,"gpucores":0}],"unresolved":[]},
				{"kind":"Pod","name":"second","replicas":1,"effective":{"gpu":1,"gpumem":999,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":999,"gpucores":0}],"unresolved":[]}]}`},
		{Name: "invalid request", Args: []string{"effective", "-f", "../../../../examples/pods/invalid.yaml"}, WantCode: 2,
			WantErrSub: `gpuadmit effective: ../../../../examples/pods/invalid.yaml (document 1): Pod team-a/broken: invalid GPU request: container "app": nvidia.com/gpumem "1500m": must be a whole number; container "app": nvidia.com/gpucores "150": must be within 0..100`},
		{Name: "missing file", Args: []string{"effective", "-f", "nope.yaml"}, WantCode: 2, WantErrSub: "open nope.yaml: no such file"},
		{Name: "no pod in input", Args: []string{"effective", "-f", "-"}, Stdin: "apiVersion: v1\nkind: Node\nmetadata: {name: node1}\n",
			WantCode: 2, WantErrSub: "-: no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found"},
		{Name: "garbage input", Args: []string{"effective", "-f", "-"}, Stdin: "{{{", WantCode: 2, WantErrSub: "document 1: not valid YAML or JSON"},
		{Name: "bad config", Args: []string{"effective", "-f", "../../../../examples/pods/scenario2-init20-app10.yaml", "--config", "../../../../examples/pods/invalid.yaml"},
			WantCode: 2, WantErrSub: `apiVersion "v1", kind "Pod": want apiVersion config.gpuadmit.io/v1alpha1, kind Configuration`},
		// HAMi pkg/device/ascend GenerateResourceRequests: 20000 MiB rounds up to the 910B2's vir12_3c_32g template (32768).
		{Name: "a pod of an NVIDIA GPU and an Ascend NPU is charged to both families",
			Args:       []string{"effective", "-o", "json", "-f", "../../../../examples/pods/ascend-910b2-and-nvidia.yaml", "--config", "../../../../pkg/config/testdata/hami-switched-on.yaml"},
			WantErrSub: "config keys gpuadmit does not read (ignored): metax.sgpuTopologyAware, nvidia.deviceCoreScaling,",
			WantOut: `{"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"containers":[
				{"name":"convert","role":"init","gpu":1,"gpumem":8192,"gpucores":0},
				{"name":"serve","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],
				"families":{"ascend-910B2":{"effective":{"gpu":1,"gpumem":32768,"gpucores":0},
				"containers":[{"name":"serve","role":"app","family":"ascend-910B2","gpu":1,"gpumem":32768,"gpucores":0}],"unresolved":[]}}}`},
		{Name: "HAMi's chart-rendered device config loads, one warning line names the ignored keys",
			Args:       []string{"effective", "-o", "json", "-f", "../../../../examples/pods/scenario2-init20-app10.yaml", "--config", "../../../../pkg/config/testdata/hami-chart-v2.10.yaml"},
			WantErrSub: "gpuadmit: warning: ../../../../pkg/config/testdata/hami-chart-v2.10.yaml: config keys gpuadmit does not read (ignored): metax.sgpuTopologyAware, mthreads.memoryPerCard, nvidia.deviceCoreScaling,",
			WantOut: `{"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"containers":[
				{"name":"convert-weights","role":"init","gpu":1,"gpumem":20480,"gpucores":0},
				{"name":"server","role":"app","gpu":1,"gpumem":10240,"gpucores":0}],"unresolved":[]}`},
		{Name: "quantities in the forms the API server canonicalises",
			Args:    []string{"effective", "-o", "json", "-f", "../../../../examples/pods/quantity-forms.yaml"},
			WantOut: `{"effective":{"gpu":1,"gpumem":16384,"gpucores":1},"containers":[{"name":"app","role":"app","gpu":1,"gpumem":16384,"gpucores":1}],"unresolved":[]}`},
		{Name: "an invalid value is shown as written", Args: []string{"effective", "-f", "-"}, WantCode: 2,
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"1.5\", nvidia.com/gpumem: 99E}}}]}\n",
			WantErrSub: `container "c": nvidia.com/gpu "1.5": must be a whole number; container "c": nvidia.com/gpumem "99E": does not fit in a 64-bit integer`},
		{Name: "a memory written with a byte suffix is refused with the MiB figure to write", Args: []string{"effective", "-f", "-"}, WantCode: 2,
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 8Gi}}}]}\n",
			WantErrSub: `gpuadmit effective: standard input (document 1): Pod p: invalid GPU request: container "c": nvidia.com/gpumem "8Gi": is 8589934592 MiB as HAMi reads it (the number, whatever the suffix); as bytes it is 8192 MiB: write 8192`},
		{Name: "the byte-suffixed value is named as written", Args: []string{"effective", "-f", "-"}, WantCode: 2,
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 8192Mi}}}]}\n",
			WantErrSub: `nvidia.com/gpumem "8192Mi": is 8589934592 MiB as HAMi reads it`},
		// HAMi pkg/device/enflame GenerateResourceRequests, summed by its webhook's fitResourceQuota: the request as written.
		{Name: "Enflame gcu-memory 16, gcu-core 25: charged 16 and 25, resolved with no node known", Args: []string{"effective", "-o", "json", "-f", "-", "--config", "../../../../pkg/config/testdata/hami-chart-v2.10.yaml"},
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec: {containers: [{name: c, resources: {limits: {enflame.com/gcu-memory: 16, enflame.com/gcu-core: 25}}}]}\n",
			WantErrSub: "config keys gpuadmit does not read (ignored)",
			WantOut: `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],
				"families":{"enflame":{"effective":{"gpu":1,"gpumem":16,"gpucores":25},"containers":[{"name":"c","role":"app","family":"enflame","gpu":1,"gpumem":16,"gpucores":25}],"unresolved":[]}}}`},
		// HAMi's pkg/device/iluvatar InitIluvatarDevice returns no device without --enable-iluvatar (its chart's default).
		{Name: "HAMi's device config with Iluvatar off: an Iluvatar pod is not charged, and the warning says so", Args: []string{"effective", "-o", "json", "-f", "-", "--config", "../../../../pkg/config/testdata/hami-chart-v2.10.yaml"},
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: i}\nspec: {containers: [{name: c, resources: {limits: {iluvatar.ai/MR-V100-vgpu: 2}}}]}\n",
			WantErrSub: "families read but not governed, as HAMi does not start their backends by default (devices.ascend.enabled, devices.iluvatar.enabled are false; a quota on them is not enforced): iluvatar-MR-V100, iluvatar-MR-V50,",
			WantOut:    `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[]}`},
		{Name: "switched on, the same pod is charged HAMi's scheduler's 200 cores", Args: []string{"effective", "-o", "json", "-f", "-", "--config", "../../../../pkg/config/testdata/hami-switched-on.yaml"},
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: i}\nspec: {containers: [{name: c, resources: {limits: {iluvatar.ai/MR-V100-vgpu: 2, iluvatar.ai/MR-V100.vMem: 64}}}]}\n",
			WantErrSub: "config keys gpuadmit does not read (ignored)",
			WantOut: `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],
				"families":{"iluvatar-MR-V100":{"effective":{"gpu":2,"gpumem":32768,"gpucores":200},"containers":[{"name":"c","role":"app","family":"iluvatar-MR-V100","gpu":2,"gpumem":32768,"gpucores":200}],"unresolved":[]}}}`},
		{Name: "a Deployment: the pod template", Args: []string{"effective", "-o", "json", "-f", "../../../../examples/workloads/deployment-4x8g.yaml"},
			WantOut: `{"objects":[{"kind":"Deployment","namespace":"team-a","name":"vllm","replicas":4,"effective":{"gpu":1,"gpumem":8192,"gpucores":0},
				"containers":[{"name":"server","role":"app","gpu":1,"gpumem":8192,"gpucores":0}],"unresolved":[]}]}`},
		{Name: "no -f", Args: []string{"effective"}, WantCode: 2, WantErrSub: "usage: gpuadmit effective -f POD.yaml"},
		{Name: "negative device memory", Args: []string{"effective", "-f", "x", "--device-memory", "-1"}, WantCode: 2, WantErrSub: "--device-memory must be >= 0"},
		{Name: "unknown flag", Args: []string{"effective", "--bogus"}, WantCode: 2, WantErrSub: "gpuadmit effective: unknown flag: --bogus"},
		{Name: "unknown command", Args: []string{"effectiv"}, WantCode: 2, WantErrSub: `unknown command "effectiv"`},
		{Name: "no command: the help on stdout, as kubectl", Args: nil, WantTextSub: []string{"Usage:\n  gpuadmit [flags]\n  gpuadmit [command]"}},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
