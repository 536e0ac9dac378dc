package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mustRead is the text of file.
func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeTemp writes text into a new file of the test's and returns its path.
func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// draData is the directory of the DRA testdata: dra-state.yaml is a dump whose
// team-a has a 16384 MiB gpumem quota, 12288 MiB of it claimed (HAMi-DRA),
// the template gpu-2g (2048 MiB, 20 cores) and an FPGA claim.
const draData = "testdata/"

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
	state := draData + "dra-state.yaml"
	noClasses := writeTemp(t, "no-classes.yaml", "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndra: {deviceClasses: []}\n")
	tests := []cliCase{
		{name: "a HAMi-DRA claim of 8192 MiB beside a claim of 12288 in a 16384 MiB quota: denied",
			args: []string{"eval", "-o", "json", "-f", draData + "hami-claim.yaml", "--state", state}, wantCode: 1, wantOut: hamiDenied},
		{name: "a claim of an ungoverned class: allowed, nothing charged",
			args: []string{"eval", "-o", "json", "-f", draData + "fpga-claim.yaml", "--state", state},
			wantOut: `{"allowed":true,"objects":[{"kind":"ResourceClaim","namespace":"team-a","name":"fpga-2","replicas":1,"admitted":1,
				"allowed":true,"effective":{"gpu":0,"gpumem":0,"gpucores":0},"denials":[],"warnings":[
				"ResourceClaim \"fpga-2\" asks for no device of a DeviceClass gpuadmit governs (the configuration governs hami-core-gpu.project-hami.io, gpu.nvidia.com, mig.nvidia.com): the webhook admits it without deciding, and it is not charged"]}]}`},
		{name: "a pod of the dumped template gpu-2g: its demand is the template's claim",
			args:    []string{"eval", "-o", "json", "-f", draData + "template-pod.yaml", "--state", state},
			wantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":2048,"gpucores":20},"denials":[],"warnings":[]}`},
		{name: "one after the other: the pod's template claim is not charged under the pod (it is decided when the claim controller creates it)",
			args: []string{"eval", "-f", draData + "template-pod.yaml", "-f", draData + "hami-claim.yaml", "--state", state, "-o", "table"}, wantCode: 1,
			wantText: "KIND            NAMESPACE   NAME             ALLOWED   ADMITTED   GPU   GPUMEM(MiB)   GPUCORES\n" +
				"Pod             team-a      notebook         true      1/1        1     2048          20\n" +
				"ResourceClaim   team-a      hami-infer-app   false     0/1        1     8192          30\n\n" +
				`ResourceClaim team-a/hami-infer-app denied: namespace "team-a": nvidia.com/gpumem: claim needs 8192 MiB, 12288 MiB used + 0 MiB reserved, limit 16384 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)` + "\n"},
		{name: "an admitted claim counts against the objects after it", stdin: strings.ReplaceAll(mustRead(t, draData+"hami-claim.yaml"), "8589934592", "4294967296"),
			args:        []string{"eval", "-o", "json", "-f", "-", "-f", draData + "template-pod.yaml", "--state", state},
			wantObjects: []string{"ResourceClaim team-a/hami-infer-app allowed", "Pod team-a/notebook denied"}, wantCode: 1},
		{name: "--explain: the limit against this claim",
			args: []string{"eval", "-f", draData + "hami-claim.yaml", "--state", state, "--explain", "-o", "table"}, wantCode: 1,
			wantTextSub: []string{"ResourceClaim team-a/hami-infer-app explained:",
				`limit nvidia.com/gpumem: 12288 used + 0 reserved + 8192 this claim = 20480 of 16384 (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem): EXCEEDED`}},
		{name: "-n moves the claim to a namespace without a quota", args: []string{"eval", "-o", "json", "-f", draData + "hami-claim.yaml", "--state", state, "-n", "team-b"},
			wantObjects: []string{"ResourceClaim team-a/hami-infer-app allowed"}, // the object as written, decided in team-b
			wantErrSub:  `gpuadmit eval: warning: namespace "team-b" is not in the state`},
		{name: "a configuration governing no class: the HAMi-DRA claim is not decided",
			args:        []string{"eval", "-o", "json", "-f", draData + "hami-claim.yaml", "--state", state, "--config", noClasses},
			wantTextSub: []string{`"admitted": 1`, "the configuration governs none"}, wantErrSub: "configuration from --config " + noClasses},
		{name: "a v1beta2 claim in the state", stdin: strings.Replace(gpu2g, "resource.k8s.io/v1", "resource.k8s.io/v1beta2", 1),
			args: []string{"eval", "-f", draData + "hami-claim.yaml", "--state", "-"}, wantCode: 2,
			wantErrSub: "gpuadmit eval: document 1 (ResourceClaimTemplate team-a/gpu-2g): apiVersion resource.k8s.io/v1beta2 is not read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestEffectiveClaims(t *testing.T) {
	tests := []cliCase{
		{name: "a HAMi-DRA claim: one container per request, memory in MiB",
			args: []string{"effective", "-o", "json", "-f", draData + "hami-claim.yaml"},
			wantOut: `{"objects":[{"kind":"ResourceClaim","namespace":"team-a","name":"hami-infer-app","replicas":1,
				"effective":{"gpu":1,"gpumem":8192,"gpucores":30},"containers":[{"name":"gpu","role":"app","gpu":1,"gpumem":8192,"gpucores":30}],"unresolved":[]}]}`},
		{name: "a claim of an ungoverned class asks for nothing",
			args: []string{"effective", "-o", "json", "-f", draData + "fpga-claim.yaml"},
			wantOut: `{"objects":[{"kind":"ResourceClaim","namespace":"team-a","name":"fpga-2","replicas":1,
				"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[],"unresolved":[]}]}`},
		{name: "a pod and the template of its claim", stdin: gpu2g,
			args: []string{"effective", "-o", "json", "-f", draData + "template-pod.yaml", "-f", "-"},
			wantOut: `{"effective":{"gpu":1,"gpumem":2048,"gpucores":20},"containers":[
				{"name":"app","role":"app","gpu":0,"gpumem":0,"gpucores":0},{"name":"gpu","role":"app","gpu":1,"gpumem":2048,"gpucores":20}],"unresolved":[]}`},
		{name: "NVIDIA's whole GPUs sized by the manifests' ResourceSlice", stdin: nvidiaSlice,
			args: []string{"effective", "-o", "json", "-f", writeTemp(t, "two.yaml", twoWholeGPUs), "-f", "-"},
			wantOut: `{"objects":[{"kind":"ResourceClaim","name":"two","replicas":1,"effective":{"gpu":2,"gpumem":163840,"gpucores":200},
				"containers":[{"name":"gpus","role":"app","gpu":2,"gpumem":163840,"gpucores":200}],"unresolved":[]}]}`},
		{name: "NVIDIA's whole GPUs of unknown size",
			args: []string{"effective", "-o", "json", "-f", writeTemp(t, "two.yaml", twoWholeGPUs)},
			wantOut: `{"objects":[{"kind":"ResourceClaim","name":"two","replicas":1,"effective":{"gpu":2,"gpumem":0,"gpucores":200},
				"containers":[{"name":"gpus","role":"app","gpu":2,"gpumem":0,"gpucores":200}],"unresolved":[
				"container \"gpus\": memory is 100% of a device whose size is unknown (pass --device-memory MiB); its gpumem is not counted"]}]}`},
		{name: "a pod whose template the manifests lack: its containers' demand alone",
			args:    []string{"effective", "-o", "json", "-f", draData + "template-pod.yaml"},
			wantOut: `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[{"name":"app","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[]}`},
		{name: "an invalid request names the claim and request", stdin: strings.Replace(mustRead(t, draData+"hami-claim.yaml"), "count: 1", "count: -1", 1),
			args: []string{"effective", "-f", "-"}, wantCode: 2, wantErrSub: `gpuadmit effective: ResourceClaim "hami-infer-app": invalid GPU request: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestUsageClaims(t *testing.T) {
	tests := []cliCase{
		{name: "the namespace's claims are counted and charged; the ungoverned one is not",
			args: []string{"usage", "-o", "json", "--state", draData + "dra-state.yaml"},
			wantOut: `{"namespaces":{"team-a":{"used":{"gpu":1,"gpumem":12288,"gpucores":0},"limits":{"gpumem":16384},"pods":0,"claims":1,
				"quotas":{"gpu-quota":{"gpumem":16384}}}},"nodes":{}}`},
		{name: "a CLAIMS column beside PODS",
			args: []string{"usage", "--state", draData + "dra-state.yaml", "-o", "table"},
			wantText: "NAMESPACE   PODS   CLAIMS   GPU   GPUMEM(MiB)   GPUCORES\n" +
				"team-a      0      1        1/-   12288/16384   0/-\n"},
		{name: "a state of claims alone", stdin: mustRead(t, draData+"hami-claim.yaml"), args: []string{"usage", "-o", "json", "--state", "-"},
			wantOut: `{"namespaces":{"team-a":{"used":{"gpu":1,"gpumem":8192,"gpucores":30},"limits":{},"pods":0,"claims":1}},"nodes":{}}`},
		{name: "no claims: no claims field, no CLAIMS column",
			args:        []string{"usage", "--state", "../../../examples/state/seed-init-done.yaml", "-o", "table"},
			wantTextSub: []string{"NAMESPACE   PODS   GPU   GPUMEM(MiB)   GPUCORES\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
