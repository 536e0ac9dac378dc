package eval_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// jobSet is a JobSet of a launcher and 4 x 8 GiB workers (the shipped
// jobset.x-k8s.io entry of workloads.kinds reads it).
const jobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: team-a}
spec:
  replicatedJobs:
    - name: launcher
      template:
        spec:
          template:
            spec:
              containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]
    - name: workers
      replicas: 2
      template:
        spec:
          parallelism: 2
          template:
            spec:
              containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 8192}}}]
`

// TestEvalCustomWorkloads: a configured custom kind is checked as a whole,
// its pod sets decided one after the other (a row each), its pods as the
// identity its controller creates them as; an object of a kind no entry
// reads is not a workload.
func TestEvalCustomWorkloads(t *testing.T) {
	state := fixtures.State + "idle-a10-quota24g.yaml"
	tests := []apptest.Case{
		{Name: "a JobSet of 1 GiB + 4 x 8 GiB past 24 GiB is refused as a whole", Stdin: jobSet,
			Args: []string{"eval", "-f", "-", "--state", state}, WantCode: 1,
			WantTextSub: []string{"JobSet   team-a      train spec.replicatedJobs[0].template.spec.template   false     1/1",
				"JobSet   team-a      train spec.replicatedJobs[1].template.spec.template   false     2/4",
				"gpuadmit: JobSet team-a/train can never run whole: 1 pod x 1024 MiB + 4 pods x 8192 MiB = 33792 MiB of nvidia.com/gpumem, over the limit 24576 MiB of ResourceQuota gpu-quota"}},
		{Name: "an unknown kind is not a workload", Stdin: "apiVersion: example.com/v1\nkind: Trainer\nmetadata: {name: x, namespace: team-a}\n",
			Args: []string{"eval", "-f", "-", "--state", state}, WantCode: 2, WantErrSub: "no Pod, workload"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
