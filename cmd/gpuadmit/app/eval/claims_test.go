package eval_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// gpu2g is the template of dra-state.yaml alone.
const gpu2g = `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu-2g, namespace: team-a}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: hami-core-gpu.project-hami.io, count: 1,
  capacity: {requests: {memory: "2147483648", cores: "20"}}}}]}}}
`

// twoWholeGPUs is a claim of two of NVIDIA's whole GPUs; nvidiaSlice publishes
// one of 80 GiB.
const (
	twoWholeGPUs = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: two}\nspec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}]}}\n"
	nvidiaSlice  = `apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node1-gpu.nvidia.com}
spec:
  driver: gpu.nvidia.com
  nodeName: node1
  pool: {name: node1, resourceSliceCount: 1}
  devices: [{name: gpu-0, attributes: {type: {string: gpu}}, capacity: {memory: {value: 80Gi}}}]
`
)

// hamiDenied is eval's JSON for hami-claim.yaml against dra-state.yaml.
const hamiDenied = `{"allowed":false,"objects":[{"kind":"ResourceClaim","namespace":"team-a","name":"hami-infer-app","replicas":1,"admitted":0,
	"allowed":false,"effective":{"gpu":1,"gpumem":8192,"gpucores":30},"denials":[
	"namespace \"team-a\": nvidia.com/gpumem: claim needs 8192 MiB, 12288 MiB used + 0 MiB reserved, limit 16384 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)"],
	"warnings":[]}]}`

func TestEvalClaims(t *testing.T) {
	state := fixtures.DraData + "dra-state.yaml"
	noClasses := fixtures.WriteTemp(t, "no-classes.yaml", "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndra: {deviceClasses: []}\n")
	tests := []apptest.Case{
		{Name: "a HAMi-DRA claim of 8192 MiB beside a claim of 12288 in a 16384 MiB quota: denied",
			Args: []string{"eval", "-o", "json", "-f", fixtures.DraData + "hami-claim.yaml", "--state", state}, WantCode: 1, WantOut: hamiDenied},
		{Name: "a claim of an ungoverned class: allowed, nothing charged",
			Args: []string{"eval", "-o", "json", "-f", fixtures.DraData + "fpga-claim.yaml", "--state", state},
			WantOut: `{"allowed":true,"objects":[{"kind":"ResourceClaim","namespace":"team-a","name":"fpga-2","replicas":1,"admitted":1,
				"allowed":true,"effective":{"gpu":0,"gpumem":0,"gpucores":0},"denials":[],"warnings":[
				"ResourceClaim \"fpga-2\" asks for no device of a DeviceClass gpuadmit governs (the configuration governs hami-core-gpu.project-hami.io, gpu.nvidia.com, mig.nvidia.com): the webhook admits it without deciding, and it is not charged"]}]}`},
		{Name: "a pod of the dumped template gpu-2g: its demand is the template's claim",
			Args:    []string{"eval", "-o", "json", "-f", fixtures.DraData + "template-pod.yaml", "--state", state},
			WantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":2048,"gpucores":20},"denials":[],"warnings":[]}`},
		{Name: "one after the other: the pod's template claim is not charged under the pod (it is decided when the claim controller creates it)",
			Args: []string{"eval", "-f", fixtures.DraData + "template-pod.yaml", "-f", fixtures.DraData + "hami-claim.yaml", "--state", state, "-o", "table"}, WantCode: 1,
			WantText: "KIND            NAMESPACE   NAME             ALLOWED   ADMITTED   GPU   GPUMEM(MiB)   GPUCORES\n" +
				"Pod             team-a      notebook         true      1/1        1     2048          20\n" +
				"ResourceClaim   team-a      hami-infer-app   false     0/1        1     8192          30\n\n" +
				`ResourceClaim team-a/hami-infer-app denied: namespace "team-a": nvidia.com/gpumem: claim needs 8192 MiB, 12288 MiB used + 0 MiB reserved, limit 16384 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)` + "\n"},
		{Name: "an admitted claim counts against the objects after it", Stdin: strings.ReplaceAll(fixtures.MustRead(t, fixtures.DraData+"hami-claim.yaml"), "8589934592", "4294967296"),
			Args:        []string{"eval", "-o", "json", "-f", "-", "-f", fixtures.DraData + "template-pod.yaml", "--state", state},
			WantObjects: []string{"ResourceClaim team-a/hami-infer-app allowed", "Pod team-a/notebook denied"}, WantCode: 1},
		{Name: "--explain: the limit against this claim",
			Args: []string{"eval", "-f", fixtures.DraData + "hami-claim.yaml", "--state", state, "--explain", "-o", "table"}, WantCode: 1,
			WantTextSub: []string{"ResourceClaim team-a/hami-infer-app explained:",
				`limit nvidia.com/gpumem: 12288 used + 0 reserved + 8192 this claim = 20480 of 16384 (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem): EXCEEDED`}},
		{Name: "-n puts a claim that names no namespace in one without a quota", Stdin: strings.Replace(fixtures.MustRead(t, fixtures.DraData+"hami-claim.yaml"), ", namespace: team-a", "", 1),
			Args:        []string{"eval", "-o", "json", "-f", "-", "--state", state, "-n", "team-b"},
			WantObjects: []string{"ResourceClaim /hami-infer-app allowed"}, // the object as written, decided in team-b
			WantErrSub:  `gpuadmit eval: warning: namespace "team-b" is not in the state`},
		{Name: "a configuration governing no class: the HAMi-DRA claim is not decided",
			Args:        []string{"eval", "-o", "json", "-f", fixtures.DraData + "hami-claim.yaml", "--state", state, "--config", noClasses},
			WantTextSub: []string{`"admitted": 1`, "the configuration governs none"}, WantErrSub: "configuration from --config " + noClasses},
		{Name: "a v1beta2 claim in the state", Stdin: strings.Replace(gpu2g, "resource.k8s.io/v1", "resource.k8s.io/v1beta2", 1),
			Args: []string{"eval", "-f", fixtures.DraData + "hami-claim.yaml", "--state", "-"}, WantCode: 2,
			WantErrSub: "gpuadmit eval: document 1 (ResourceClaimTemplate team-a/gpu-2g): apiVersion resource.k8s.io/v1beta2 is not read"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

func TestEffectiveClaims(t *testing.T) {
	tests := []apptest.Case{
		{Name: "a HAMi-DRA claim: one container per request, memory in MiB",
			Args: []string{"effective", "-o", "json", "-f", fixtures.DraData + "hami-claim.yaml"},
			WantOut: `{"objects":[{"kind":"ResourceClaim","namespace":"team-a","name":"hami-infer-app","replicas":1,
				"effective":{"gpu":1,"gpumem":8192,"gpucores":30},"containers":[{"name":"gpu","role":"app","gpu":1,"gpumem":8192,"gpucores":30}],"unresolved":[]}]}`},
		{Name: "a claim of an ungoverned class asks for nothing",
			Args: []string{"effective", "-o", "json", "-f", fixtures.DraData + "fpga-claim.yaml"},
			WantOut: `{"objects":[{"kind":"ResourceClaim","namespace":"team-a","name":"fpga-2","replicas":1,
				"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[],"unresolved":[]}]}`},
		{Name: "a pod and the template of its claim", Stdin: gpu2g,
			Args: []string{"effective", "-o", "json", "-f", fixtures.DraData + "template-pod.yaml", "-f", "-"},
			WantOut: `{"effective":{"gpu":1,"gpumem":2048,"gpucores":20},"containers":[
				{"name":"app","role":"app","gpu":0,"gpumem":0,"gpucores":0},{"name":"gpu","role":"app","gpu":1,"gpumem":2048,"gpucores":20}],"unresolved":[]}`},
		{Name: "NVIDIA's whole GPUs sized by the manifests' ResourceSlice", Stdin: nvidiaSlice,
			Args: []string{"effective", "-o", "json", "-f", fixtures.WriteTemp(t, "two.yaml", twoWholeGPUs), "-f", "-"},
			WantOut: `{"objects":[{"kind":"ResourceClaim","name":"two","replicas":1,"effective":{"gpu":2,"gpumem":163840,"gpucores":200},
				"containers":[{"name":"gpus","role":"app","gpu":2,"gpumem":163840,"gpucores":200}],"unresolved":[]}]}`},
		{Name: "NVIDIA's whole GPUs of unknown size",
			Args: []string{"effective", "-o", "json", "-f", fixtures.WriteTemp(t, "two.yaml", twoWholeGPUs)},
			WantOut: `{"objects":[{"kind":"ResourceClaim","name":"two","replicas":1,"effective":{"gpu":2,"gpumem":0,"gpucores":200},
				"containers":[{"name":"gpus","role":"app","gpu":2,"gpumem":0,"gpucores":200}],"unresolved":[
				"container \"gpus\": memory is 100% of a device whose size is unknown (pass --device-memory MiB); its gpumem is not counted"]}]}`},
		{Name: "a pod whose template the manifests lack: its containers' demand alone",
			Args:    []string{"effective", "-o", "json", "-f", fixtures.DraData + "template-pod.yaml"},
			WantOut: `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[{"name":"app","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[]}`},
		{Name: "an invalid request names the claim and request", Stdin: strings.Replace(fixtures.MustRead(t, fixtures.DraData+"hami-claim.yaml"), "count: 1", "count: -1", 1),
			Args: []string{"effective", "-f", "-"}, WantCode: 2, WantErrSub: `gpuadmit effective: standard input (document 1): ResourceClaim team-a/hami-infer-app: invalid GPU request: `},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

func TestUsageClaims(t *testing.T) {
	tests := []apptest.Case{
		{Name: "the namespace's claims are counted and charged; the ungoverned one is not",
			Args: []string{"usage", "-o", "json", "--state", fixtures.DraData + "dra-state.yaml"},
			WantOut: `{"namespaces":{"team-a":{"used":{"gpu":1,"gpumem":12288,"gpucores":0},"limits":{"gpumem":16384},"pods":0,"claims":1,
				"quotas":{"gpu-quota":{"gpumem":16384}}}},"nodes":{}}`},
		{Name: "a CLAIMS column beside PODS",
			Args: []string{"usage", "--state", fixtures.DraData + "dra-state.yaml", "-o", "table"},
			WantText: "NAMESPACE   PODS   CLAIMS   GPU   GPUMEM(MiB)   GPUCORES\n" +
				"team-a      0      1        1/-   12288/16384   0/-\n"},
		{Name: "a state of claims alone", Stdin: fixtures.MustRead(t, fixtures.DraData+"hami-claim.yaml"), Args: []string{"usage", "-o", "json", "--state", "-"},
			WantOut: `{"namespaces":{"team-a":{"used":{"gpu":1,"gpumem":8192,"gpucores":30},"limits":{},"pods":0,"claims":1}},"nodes":{}}`},
		{Name: "no claims: no claims field, no CLAIMS column",
			Args:        []string{"usage", "--state", "../../../../examples/state/seed-init-done.yaml", "-o", "table"},
			WantTextSub: []string{"NAMESPACE   PODS   GPU   GPUMEM(MiB)   GPUCORES\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
