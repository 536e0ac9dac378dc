// Package demo_test runs the demo (internal/demo/seed's four scenarios and
// internal/demo/workloads' fifth, what `make demo` prints) on a real
// control plane with the real kube-controller-manager, and checks that it
// fails, rather than prints, when what it observes does not hold.
package demo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/demo/seed"
	"github.com/gpuadmit/gpuadmit/internal/demo/workloads"
)

// play runs the scenarios as cmd/demo does: the seed's four with the pods
// of examples, then the fifth with the Deployments of workloadExamples
// (when not "").
func play(t *testing.T, examples, workloadExamples string) (string, error) {
	t.Helper()
	c := local.ForTestWith(t, local.Config{Manifests: "../../manifests/webhook", ControllerManager: workloadExamples != ""}, local.DefaultWebhook)
	var out bytes.Buffer
	err := seed.Play(t.Context(), c, examples, &out)
	if err == nil && workloadExamples != "" {
		err = workloads.Play(t.Context(), c, workloadExamples, &out)
	}
	return out.String(), err
}

func TestDemoPrintsWhatItMeasured(t *testing.T) {
	out, err := play(t, "../../examples/pods", "../../examples/workloads")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"scenario 1: denied llm-oversize (init 30720 MiB + app 4096 MiB): namespace \"team-a\": nvidia.com/gpumem: pod needs 30720 MiB",
		"scenario 2: allowed llm-server (init 20480 MiB, then app 10240 MiB): effective demand max(10240, 20480) = 20480 MiB, annotated gpuadmit.io/effective={\"gpu\":1,\"gpumem\":20480,\"gpucores\":0}",
		"scenario 3: recorded 20480 MiB for team-a while llm-server's init container convert-weights runs on node1 (not 20480+10240 = 30720)",
		"scenario 4: allowed small-job (12288 MiB) after convert-weights exited 0: llm-server shrank to 10240 MiB, team-a now uses 22528 of 24576 MiB",
		"$ kubectl get gpuusage -n team-a\nNAME    GPU   GPUMEM        GPUCORES   FAMILIES   AGE\nusage   2/-   22528/24576   0/-        ",
		"scenario 5: denied deployment llm (4 x 8192 MiB = 32768 MiB) at apply, before any pod exists: gpuadmit: Deployment team-b/llm can never run whole: 4 pods x 8192 MiB = 32768 MiB of nvidia.com/gpumem, over the limit 24576 MiB",
		"scenario 5: allowed deployment llm scaled to 3 replicas: the ReplicaSet controller created its 3 pods through the pod webhook, team-b uses 24576 of 24576 MiB",
		"scenario 5: allowed deployment notebook (1 x 4096 MiB) with a warning: gpuadmit: Deployment team-b/notebook: 1 of 1 pods will wait",
		"$ gpuadmit why deployment/notebook -n team-b\nWORKLOAD",
		"Deployment/notebook   1         0          0         1         gpu=1 gpumem=4096MiB",
		"Last denial: ",
		"GPUQuotaExceeded on Deployment/notebook",
		"Short: 1 pod(s); to admit them, free or raise:",
		"nvidia.com/gpumem   4096     0          4096    gpu-quota   24576   24576   0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestDemoFailsOnAMismatch: with an app container that does not fit beside
// the small job, scenario 4 cannot show what it must: the demo fails
// instead of printing a line.
func TestDemoFailsOnAMismatch(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"scenario1-init30-app4.yaml", "scenario2-init20-app10.yaml", "scenario4-app12.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../examples/pods", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "scenario2-init20-app10.yaml" {
			b = bytes.Replace(b, []byte("nvidia.com/gpumem: 10240"), []byte("nvidia.com/gpumem: 16384"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := play(t, dir, "")
	if err == nil || strings.Contains(out, "scenario 4:") {
		t.Fatalf("the demo did not fail: err %v\n%s", err, out)
	}
	t.Logf("failed as it must: %v", err)
}

// TestDemoWorkloadsFailsOnAMismatch: with pods of 10 GiB, two of them fit
// team-b and leave the notebook room, so the cluster admits the notebook
// without the warning the fifth scenario must show: it fails instead of
// printing its last lines.
func TestDemoWorkloadsFailsOnAMismatch(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{workloads.LLMFile, workloads.NotebookFile} {
		b, err := os.ReadFile(filepath.Join("../../examples/workloads", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == workloads.LLMFile {
			b = bytes.Replace(b, []byte("nvidia.com/gpumem: 8192"), []byte("nvidia.com/gpumem: 10240"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := play(t, "../../examples/pods", dir)
	if err == nil || !strings.Contains(out, "scenario 5: allowed deployment llm scaled to 2 replicas") || strings.Contains(out, "$ gpuadmit why") {
		t.Fatalf("the demo did not fail: err %v\n%s", err, out)
	}
	t.Logf("failed as it must: %v", err)
}
