package eval_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
)

// teamState: team ml (GPUClusterQuota, 4 devices) over ml-dev (by label)
// and ml-train (by name), ml-dev running 2 devices, the team's object
// holding a reservation of 1 device in ml-train and ml-old departed with 1
// device still charged; namespace outside with 3 devices and no team.
const teamState = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: node1
    annotations:
      gpuadmit.io/gpu-devices: '[{"uuid":"GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","index":0,"model":"NVIDIA A10","memoryMiB":24576,"cores":100,"migEnabled":false,"healthy":true}]'
- {apiVersion: v1, kind: Namespace, metadata: {name: ml-dev, labels: {team: ml}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: ml-train}}
- {apiVersion: v1, kind: Namespace, metadata: {name: ml-old}}
- {apiVersion: v1, kind: Namespace, metadata: {name: outside}}
- apiVersion: gpuadmit.io/v1alpha1
  kind: GPUClusterQuota
  metadata: {name: ml}
  spec:
    namespaceSelector: {matchLabels: {team: ml}}
    namespaces: [ml-train]
    hard: {limits.nvidia.com/gpu: "HARD"}
- apiVersion: gpuadmit.io/v1alpha1
  kind: GPUReservationSet
  metadata: {name: gcq.ml, namespace: gpuadmit-system}
  status:
    reservations:
    - {podUID: r1, podName: r1, namespace: ml-train, user: alice, demand: {gpu: 1, gpumem: 1024}}
    departures:
    - {namespace: ml-old}
- apiVersion: v1
  kind: Pod
  metadata: {name: dev, namespace: ml-dev, uid: dev}
  spec:
    containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2, nvidia.com/gpumem: 1024}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: old, namespace: ml-old, uid: old}
  spec:
    containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: big, namespace: outside, uid: big}
  spec:
    containers: [{name: c, resources: {limits: {nvidia.com/gpu: 3, nvidia.com/gpumem: 1024}}}]
`

// onePod is a pod of one device in namespace NS.
const onePod = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: NS}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]
`

// TestEvalTeams: eval --state decides against the team quotas the state
// holds, as the webhook: the team's usage over its namespaces (a departed
// one included), its object's reservations counted, a namespace outside
// unaffected.
func TestEvalTeams(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := write("full.yaml", strings.Replace(teamState, "HARD", "4", 1))   // 2 + 1 reserved + 1 departed = 4
	roomy := write("roomy.yaml", strings.Replace(teamState, "HARD", "5", 1)) // one more fits
	pod := func(ns string) string { return strings.ReplaceAll(onePod, "NS", ns) }
	denied := `GPUClusterQuota \"ml\"`
	for _, tt := range []apptest.Case{
		{Name: "ml-train: the team is full (its reservation and the departed namespace count)", Stdin: pod("ml-train"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantCode: 1, WantTextSub: []string{`"allowed": false`, denied}},
		{Name: "ml-dev (selected by label): full too", Stdin: pod("ml-dev"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantCode: 1, WantTextSub: []string{`"allowed": false`, denied}},
		{Name: "ml-old, departed: still decided against the team", Stdin: pod("ml-old"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantCode: 1, WantTextSub: []string{`"allowed": false`, denied}},
		{Name: "outside: no team, allowed", Stdin: pod("outside"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", full}, WantTextSub: []string{`"allowed": true`}, NotInText: []string{"GPUClusterQuota"}},
		{Name: "a limit of 5: one more fits", Stdin: pod("ml-train"),
			Args: []string{"eval", "-o", "json", "-f", "-", "--state", roomy}, WantTextSub: []string{`"allowed": true`}},
	} {
		t.Run(tt.Name, tt.Check)
	}
}
