package app

import (
	"os"
	"path/filepath"
	"testing"
)

const (
	pods  = "../../../examples/pods/"
	state = "../../../examples/state/"
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
	tests := []cliCase{
		{name: "seed 1: init 30 GiB denied by the 24 GiB quota and the 24 GiB GPU",
			args: []string{"eval", "-o", "json", "-f", pods + "scenario1-init30-app4.yaml", "--state", state + "idle-a10-quota24g.yaml"}, wantCode: 1,
			wantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":30720,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 30720 MiB, 0 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)",
				"namespace \"team-a\": pod \"llm-oversize\": container \"convert-weights\" needs 1 device(s) with 30720 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)"],
				"warnings":[]}`},
		{name: "seed 2: init 20 GiB + app 10 GiB allowed on an idle 24 GiB GPU",
			args:    []string{"eval", "-o", "json", "-f", pods + "scenario2-init20-app10.yaml", "--state", state + "idle-a10-quota24g.yaml"},
			wantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[],"warnings":[]}`},
		{name: "seed 4: 12 GiB denied while another pod's 20 GiB init runs",
			args: []string{"eval", "-o", "json", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-running.yaml"}, wantCode: 1,
			wantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":12288,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 12288 MiB, 20480 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)"],"warnings":[]}`},
		{name: "seed 4: 12 GiB allowed once that init exited 0",
			args: []string{"eval", "-o", "json", "-f", pods + "scenario4-app12.yaml", "--state", state + "seed-init-done.yaml"},
			wantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":12288,"gpucores":0},"denials":[],"warnings":[
				"namespace \"team-a\": nvidia.com/gpumem will be at 91 % of its limit after this pod (22528 of 24576 MiB, ResourceQuota \"gpu-quota\")"]}`},
		{name: "percentage resolved against the largest device; the pending notebook counts too",
			args: []string{"eval", "-o", "json", "-f", pods + "percentage.yaml", "--state", state + "cluster.yaml"}, wantCode: 1,
			wantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 20480 MiB, 49152 MiB used + 0 MiB reserved, limit 65536 MiB (ResourceQuota \"gpu-small\" limits.nvidia.com/gpumem); container \"notebook\" takes 50 % of a device: 1 x 20480 MiB"],"warnings":[
				"namespace \"team-a\": nvidia.com/gpu will be at 100 % of its limit after this pod (4 of 4, ResourceQuota \"gpu-small\")"]}`},
		{name: "--namespace moves the pod to team-b, where GPUs are blocked",
			args: []string{"eval", "-o", "json", "-f", pods + "scenario2-init20-app10.yaml", "--state", state + "cluster.yaml", "--namespace", "team-b"}, wantCode: 1,
			wantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[
				"namespace \"team-b\": nvidia.com/gpu: pod needs 1, 0 used + 0 reserved, limit 0 (ResourceQuota \"no-gpus\" limits.nvidia.com/gpu)"],"warnings":[]}`},
		{name: "-n is --namespace",
			args: []string{"eval", "-o", "json", "-f", pods + "scenario2-init20-app10.yaml", "--state", state + "cluster.yaml", "-n", "team-b"}, wantCode: 1,
			wantOut: `{"allowed":false,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[
				"namespace \"team-b\": nvidia.com/gpu: pod needs 1, 0 used + 0 reserved, limit 0 (ResourceQuota \"no-gpus\" limits.nvidia.com/gpu)"],"warnings":[]}`},
		{name: "invalid request names container, resource and value",
			args: []string{"eval", "-o", "json", "-f", pods + "invalid.yaml", "--state", state + "cluster.yaml"}, wantCode: 1,
			wantOut: `{"allowed":false,"effective":{"gpu":0,"gpumem":0,"gpucores":0},"denials":[
				"namespace \"team-a\": pod \"broken\": container \"app\": nvidia.com/gpucores \"150\": must be within 0..100",
				"namespace \"team-a\": pod \"broken\": container \"app\": nvidia.com/gpumem \"1500m\": must be a whole number"],"warnings":[]}`},
		{name: "--policy adds an operator policy", stdin: fiveGPUs,
			args: []string{"eval", "-o", "json", "-f", "-", "--state", state + "idle-a10-quota24g.yaml", "--policy", "../../../examples/policy"}, wantCode: 1,
			wantOut: `{"allowed":false,"effective":{"gpu":5,"gpumem":5120,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpu: pod needs 5 devices, at most 4 per pod outside namespace \"research\"",
				"namespace \"team-a\": pod \"big\": container \"c\" needs 5 device(s) with 1024 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)",
				"namespace \"team-a\": pod \"big\": required label \"cost-center\" is missing or empty; every GPU pod must carry it"],"warnings":[]}`,
			wantErrSub: "gpuadmit eval: configuration: the defaults; policies: built-in + --policy ../../../examples/policy\n"},
		{name: "pod without GPU resources: the webhook is not consulted", stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n",
			args: []string{"eval", "-o", "json", "-f", "-", "--state", state + "seed-init-running.yaml"},
			wantOut: `{"allowed":true,"effective":{"gpu":0,"gpumem":0,"gpucores":0},"denials":[],"warnings":[
				"the webhook would not be consulted: the pod does not meet the validating webhook's matchCondition requests-a-managed-gpu-resource, so the API server admits it without asking gpuadmit"]}`},
		{name: "pod without containers: the mutating webhook's matchCondition fails, failurePolicy Fail",
			stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {}\n",
			args:  []string{"eval", "-f", "-", "--state", state + "seed-init-running.yaml"}, wantCode: 2,
			wantErrSub: `the API server would reject the pod: MutatingWebhookConfiguration webhook "mutate.gpuadmit.io": matchConditions: expression '[object.spec.containers`},
		{name: "broken --policy", args: []string{"eval", "-f", pods + "scenario2-init20-app10.yaml", "--state", state + "cluster.yaml", "--policy", broken},
			wantCode: 2, wantErrSub: "x.rego:3: rego_parse_error"},
		{name: "missing --policy directory", args: []string{"eval", "-f", pods + "scenario2-init20-app10.yaml", "--state", state + "cluster.yaml", "--policy", "nope"},
			wantCode: 2, wantErrSub: "policy directory: stat nope: no such file"},
		{name: "a 4-replica Deployment: 3 of 4 fit the 24 GiB quota, one after the other",
			args: []string{"eval", "-o", "json", "-f", "../../../examples/workloads/deployment-4x8g.yaml", "--state", state + "idle-a10-quota24g.yaml"}, wantCode: 1,
			wantOut: `{"allowed":false,"objects":[{"kind":"Deployment","namespace":"team-a","name":"vllm","replicas":4,"admitted":3,"allowed":false,
				"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 8192 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)"],
				"warnings":[]}]}`},
		{name: "whole cards one after the other: exactly one fits a 24 GiB namespace", stdin: wholeCards,
			args: []string{"eval", "-o", "json", "-f", "-", "--state", state + "idle-a10-quota24g.yaml"}, wantCode: 1,
			wantOut: `{"allowed":false,"objects":[
				{"kind":"Job","namespace":"team-a","name":"whole","replicas":3,"admitted":1,"allowed":false,"effective":{"gpu":1,"gpumem":24576,"gpucores":100},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 24576 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem); container \"c\" takes the whole device: 1 x 24576 MiB (gpumem unset or 0 books the whole card, as in HAMi)"],
				"warnings":["namespace \"team-a\": nvidia.com/gpumem will be at 100 % of its limit after this pod (24576 of 24576 MiB, ResourceQuota \"gpu-quota\")"]},
				{"kind":"Pod","namespace":"team-a","name":"zero","replicas":1,"admitted":0,"allowed":false,"effective":{"gpu":1,"gpumem":24576,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 24576 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem); container \"c\" takes the whole device: 1 x 24576 MiB (gpumem unset or 0 books the whole card, as in HAMi)"],
				"warnings":[]}]}`},
		{name: "no --state reads the cluster: no kubeconfig", args: []string{"eval", "-f", pods + "scenario2-init20-app10.yaml", "--kubeconfig", "nope.kubeconfig"},
			wantCode: 2, wantErrSub: "gpuadmit eval: no --state given, reading the kubeconfig: stat nope.kubeconfig: no such file"},
		{name: "no -f", args: []string{"eval", "--state", state + "cluster.yaml"}, wantCode: 2,
			wantErrSub: "gpuadmit eval: -f is required; usage: gpuadmit eval -f POD.yaml [--state STATE.yaml]"},
		{name: "both from standard input", args: []string{"eval", "-f", "-", "--state", "-"}, wantCode: 2, wantErrSub: "cannot both read standard input"},
		{name: "state is not a pod file", args: []string{"eval", "-f", state + "idle-a10-quota24g.yaml", "--state", state + "cluster.yaml"},
			wantCode: 2, wantErrSub: "no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found"},
		{name: "--gpuadmit-namespace reads the cluster, which --state does not",
			args: []string{"eval", "-f", pods + "scenario2-init20-app10.yaml", "--state", state + "cluster.yaml", "--gpuadmit-namespace", "gpu"}, wantCode: 2,
			wantErrSub: "gpuadmit eval: --gpuadmit-namespace names where the cluster's configuration is read; with --state nothing is read from the cluster"},
		{name: "--config with --state: the line says so", args: []string{"eval", "-o", "json", "-f", pods + "scenario2-init20-app10.yaml", "--state", state + "idle-a10-quota24g.yaml",
			"--config", "../../../examples/config/memory-factor-1024.yaml"}, wantCode: 1, wantTextSub: []string{`"gpumem": 20971520`},
			wantErrSub: "gpuadmit eval: configuration from --config ../../../examples/config/memory-factor-1024.yaml; policies: built-in\n"},
		{name: "unknown flag", args: []string{"eval", "--pod", "x"}, wantCode: 2, wantErrSub: "gpuadmit eval: unknown flag: --pod\nSee 'gpuadmit eval --help' for usage."},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
