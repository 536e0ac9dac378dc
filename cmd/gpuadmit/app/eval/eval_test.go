package eval_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// wholeCards: a Job of three whole-card pods, then a pod asking gpumem 0
// (HAMi books the whole card for both).
const wholeCards = `apiVersion: batch/v1
kind: Job
metadata: {name: whole, namespace: team-a}
spec:
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: zero, namespace: team-a}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 0}}}]
`

func TestEvalCommand(t *testing.T) {
	fiveGPUs := "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: team-a}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: 5, nvidia.com/gpumem: 1024}}\n"
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "x.rego"), []byte("package gpuadmit.admission\n\ndeny contains x if {"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []apptest.Case{
		{Name: "seed 1: init 30 GiB denied by the 24 GiB quota and the 24 GiB GPU",
			Args: []string{"eval", "-o", "json", "-f", fixtures.Pods + "scenario1-init30-app4.yaml", "--state", fixtures.State + "idle-a10-quota24g.yaml"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":30720,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 30720 MiB, 0 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)",
				"namespace \"team-a\": pod \"llm-oversize\": container \"convert-weights\" needs 1 device(s) with 30720 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)"],
				"warnings":[]}`},
		{Name: "seed 2: init 20 GiB + app 10 GiB allowed on an idle 24 GiB GPU",
			Args:    []string{"eval", "-o", "json", "-f", fixtures.Pods + "scenario2-init20-app10.yaml", "--state", fixtures.State + "idle-a10-quota24g.yaml"},
			WantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[],"warnings":[]}`},
		{Name: "seed 4: 12 GiB denied while another pod's 20 GiB init runs",
			Args: []string{"eval", "-o", "json", "-f", fixtures.Pods + "scenario4-app12.yaml", "--state", fixtures.State + "seed-init-running.yaml"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":12288,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 12288 MiB, 20480 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)"],"warnings":[]}`},
		{Name: "seed 4: 12 GiB allowed once that init exited 0",
			Args: []string{"eval", "-o", "json", "-f", fixtures.Pods + "scenario4-app12.yaml", "--state", fixtures.State + "seed-init-done.yaml"},
			WantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":12288,"gpucores":0},"denials":[],"warnings":[
				"namespace \"team-a\": nvidia.com/gpumem will be at 91 % of its limit after this pod (22528 of 24576 MiB, ResourceQuota \"gpu-quota\")"]}`},
		{Name: "percentage resolved against the largest device; the pending notebook counts too",
			Args: []string{"eval", "-o", "json", "-f", fixtures.Pods + "percentage.yaml", "--state", fixtures.State + "cluster.yaml"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 20480 MiB, 49152 MiB used + 0 MiB reserved, limit 65536 MiB (ResourceQuota \"gpu-small\" limits.nvidia.com/gpumem); container \"notebook\" takes 50 % of a device: 1 x 20480 MiB"],"warnings":[
				"namespace \"team-a\": nvidia.com/gpu will be at 100 % of its limit after this pod (4 of 4, ResourceQuota \"gpu-small\")"]}`},
		{Name: "--namespace against the manifest's own namespace: refused, as kubectl",
			Args: []string{"eval", "-o", "json", "-f", fixtures.Pods + "scenario2-init20-app10.yaml", "--state", fixtures.State + "cluster.yaml", "--namespace", "team-b"}, WantCode: 2,
			WantErrSub: "gpuadmit eval: " + fixtures.Pods + "scenario2-init20-app10.yaml (document 1): Pod team-a/llm-server: " +
				`the namespace from the provided object "team-a" does not match the namespace "team-b". You must pass '--namespace=team-a' to perform this operation.`},
		{Name: "--namespace puts a pod that names none in team-b, where GPUs are blocked", Stdin: strings.Replace(fixtures.MustRead(t, fixtures.Pods+"scenario2-init20-app10.yaml"), "namespace: team-a", "", 1),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", fixtures.State + "cluster.yaml", "--namespace", "team-b"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[
				"namespace \"team-b\": nvidia.com/gpu: pod needs 1, 0 used + 0 reserved, limit 0 (ResourceQuota \"no-gpus\" limits.nvidia.com/gpu)"],"warnings":[]}`,
			WantErrSub: `gpuadmit eval: warning: quota team-b/no-gpus: limits.nvidia.com/gpucores "1.5": not a whole number: enforced as 1`},
		{Name: "-n is --namespace", Stdin: strings.Replace(fixtures.MustRead(t, fixtures.Pods+"scenario2-init20-app10.yaml"), "namespace: team-a", "", 1),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", fixtures.State + "cluster.yaml", "-n", "team-b"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[
				"namespace \"team-b\": nvidia.com/gpu: pod needs 1, 0 used + 0 reserved, limit 0 (ResourceQuota \"no-gpus\" limits.nvidia.com/gpu)"],"warnings":[]}`,
			WantErrSub: `gpuadmit eval: warning: quota team-b/no-gpus: limits.nvidia.com/gpucores "1.5": not a whole number: enforced as 1`},
		{Name: "invalid request names container, resource and value",
			Args: []string{"eval", "-o", "json", "-f", fixtures.Pods + "invalid.yaml", "--state", fixtures.State + "cluster.yaml"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":0,"gpumem":0,"gpucores":0},"denials":[
				"namespace \"team-a\": pod \"broken\": container \"app\": nvidia.com/gpucores \"150\": must be within 0..100",
				"namespace \"team-a\": pod \"broken\": container \"app\": nvidia.com/gpumem \"1500m\": must be a whole number"],"warnings":[]}`},
		{Name: "a memory written with a byte suffix is denied with the MiB figure to write, as the webhook denies it",
			Stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 8Gi}}}]}\n",
			Args:  []string{"eval", "-o", "json", "-f", "-", "--state", fixtures.State + "cluster.yaml"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":0,"gpumem":0,"gpucores":0},"denials":[
				"namespace \"team-a\": pod \"p\": container \"c\": nvidia.com/gpumem \"8Gi\": is 8589934592 MiB as HAMi reads it (the number, whatever the suffix); as bytes it is 8192 MiB: write 8192"],"warnings":[]}`},
		{Name: "Enflame by memory and cores with no Enflame node known: charged as written, not denied as unresolved",
			Stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: e, namespace: team-a}\nspec: {containers: [{name: c, resources: {limits: {enflame.com/gcu-memory: 16, enflame.com/gcu-core: 25}}}]}\n",
			Args:       []string{"eval", "-o", "json", "-f", "-", "--state", fixtures.State + "cluster.yaml", "--config", "../../../../pkg/config/testdata/hami-chart-v2.10.yaml"},
			WantErrSub: "config keys gpuadmit does not read (ignored)",
			WantTextSub: []string{`"allowed": true`, `"denials": []`, `"enflame": {
      "effective": {
        "gpu": 1,
        "gpumem": 16,
        "gpucores": 25`}},
		{Name: "--policy adds an operator policy", Stdin: fiveGPUs,
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", fixtures.State + "idle-a10-quota24g.yaml", "--policy", "../../../../examples/policy"}, WantCode: 1,
			WantOut: `{"allowed":false,"effective":{"gpu":5,"gpumem":5120,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpu: pod needs 5 devices, at most 4 per pod outside namespace \"research\"",
				"namespace \"team-a\": pod \"big\": container \"c\" needs 5 device(s) with 1024 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)",
				"namespace \"team-a\": pod \"big\": required label \"cost-center\" is missing or empty; every GPU pod must carry it"],"warnings":[]}`,
			WantErrSub: "gpuadmit eval: configuration: the defaults; policies: built-in + --policy ../../../../examples/policy\n"},
		{Name: "pod without GPU resources: the webhook is not consulted", Stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n",
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", fixtures.State + "seed-init-running.yaml"},
			WantOut: `{"allowed":true,"effective":{"gpu":0,"gpumem":0,"gpucores":0},"denials":[],"warnings":[
				"the webhook would not be consulted: the pod does not meet the validating webhook's matchCondition requests-a-managed-gpu-resource, so the API server admits it without asking gpuadmit"]}`},
		{Name: "pod without containers: the mutating webhook's matchCondition fails, failurePolicy Fail",
			Stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {}\n",
			Args:  []string{"eval", "-f", "-", "--state", fixtures.State + "seed-init-running.yaml"}, WantCode: 2,
			WantErrSub: `the API server would reject the pod: MutatingWebhookConfiguration webhook "mutate.gpuadmit.io": matchConditions: expression '[object.spec.containers`},
		{Name: "broken --policy", Args: []string{"eval", "-f", fixtures.Pods + "scenario2-init20-app10.yaml", "--state", fixtures.State + "cluster.yaml", "--policy", broken},
			WantCode: 2, WantErrSub: "x.rego:3: rego_parse_error"},
		{Name: "missing --policy directory", Args: []string{"eval", "-f", fixtures.Pods + "scenario2-init20-app10.yaml", "--state", fixtures.State + "cluster.yaml", "--policy", "nope"},
			WantCode: 2, WantErrSub: "policy directory: stat nope: no such file"},
		{Name: "a 4-replica Deployment: refused as a whole (4 x 8 GiB past 24 GiB), and 3 of 4 fit one after the other",
			Args: []string{"eval", "-o", "json", "-f", "../../../../examples/workloads/deployment-4x8g.yaml", "--state", fixtures.State + "idle-a10-quota24g.yaml"}, WantCode: 1,
			WantOut: `{"allowed":false,"objects":[{"kind":"Deployment","namespace":"team-a","name":"vllm","replicas":4,"admitted":3,"allowed":false,
				"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"denials":[
				"gpuadmit: Deployment team-a/vllm can never run whole: 4 pods x 8192 MiB = 32768 MiB of nvidia.com/gpumem, over the limit 24576 MiB of ResourceQuota gpu-quota",
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 8192 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)"],
				"warnings":[]}]}`},
		{Name: "whole cards one after the other: exactly one fits a 24 GiB namespace", Stdin: wholeCards,
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", fixtures.State + "idle-a10-quota24g.yaml"}, WantCode: 1,
			WantOut: `{"allowed":false,"objects":[
				{"kind":"Job","namespace":"team-a","name":"whole","replicas":3,"admitted":1,"allowed":false,"effective":{"gpu":1,"gpumem":24576,"gpucores":100},"denials":[
				"gpuadmit: Job team-a/whole can never run whole: 3 pods x 24576 MiB = 73728 MiB of nvidia.com/gpumem, over the limit 24576 MiB of ResourceQuota gpu-quota",
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 24576 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem); container \"c\" takes the whole device: 1 x 24576 MiB (gpumem unset or 0 books the whole card, as in HAMi)"],
				"warnings":["namespace \"team-a\": nvidia.com/gpumem will be at 100 % of its limit after this pod (24576 of 24576 MiB, ResourceQuota \"gpu-quota\")"]},
				{"kind":"Pod","namespace":"team-a","name":"zero","replicas":1,"admitted":0,"allowed":false,"effective":{"gpu":1,"gpumem":24576,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 24576 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem); container \"c\" takes the whole device: 1 x 24576 MiB (gpumem unset or 0 books the whole card, as in HAMi)"],
				"warnings":[]}]}`},
		{Name: "no --state reads the cluster: no kubeconfig", Args: []string{"eval", "-f", fixtures.Pods + "scenario2-init20-app10.yaml", "--kubeconfig", "nope.kubeconfig"},
			WantCode: 2, WantErrSub: "gpuadmit eval: no --state given, reading the kubeconfig: stat nope.kubeconfig: no such file"},
		{Name: "no -f", Args: []string{"eval", "--state", fixtures.State + "cluster.yaml"}, WantCode: 2,
			WantErrSub: "gpuadmit eval: -f is required; usage: gpuadmit eval -f POD.yaml [--state STATE.yaml]"},
		{Name: "both from standard input", Args: []string{"eval", "-f", "-", "--state", "-"}, WantCode: 2, WantErrSub: "cannot both read standard input"},
		{Name: "state is not a pod file", Args: []string{"eval", "-f", fixtures.State + "idle-a10-quota24g.yaml", "--state", fixtures.State + "cluster.yaml"},
			WantCode: 2, WantErrSub: "no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found"},
		{Name: "--gpuadmit-namespace reads the cluster, which --state does not",
			Args: []string{"eval", "-f", fixtures.Pods + "scenario2-init20-app10.yaml", "--state", fixtures.State + "cluster.yaml", "--gpuadmit-namespace", "gpu"}, WantCode: 2,
			WantErrSub: "gpuadmit eval: --gpuadmit-namespace names where the cluster's configuration is read; with --state nothing is read from the cluster"},
		{Name: "--config with --state: the line says so", Args: []string{"eval", "-o", "json", "-f", fixtures.Pods + "scenario2-init20-app10.yaml", "--state", fixtures.State + "idle-a10-quota24g.yaml",
			"--config", "../../../../examples/config/memory-factor-1024.yaml"}, WantCode: 1, WantTextSub: []string{`"gpumem": 20971520`},
			WantErrSub: "gpuadmit eval: configuration from --config ../../../../examples/config/memory-factor-1024.yaml; policies: built-in\n"},
		{Name: "unknown flag", Args: []string{"eval", "--pod", "x"}, WantCode: 2, WantErrSub: "gpuadmit eval: unknown flag: --pod\nSee 'gpuadmit eval --help' for usage."},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
