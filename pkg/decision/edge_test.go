package decision

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// TestRequestsIsTheEdgesAnswer: Requests is the one answer to "is this a
// GPU pod?" that the edge (the validating handler, the command line) asks
// and hands down as Request.NoManagedResource. A pod counts when any of
// its containers (app, init, native sidecar) requests a family's resource,
// or when it names a ResourceClaimTemplate the ledger knows whose claim
// asks for a governed DeviceClass; anything else is not a GPU pod.
func TestRequestsIsTheEdgesAnswer(t *testing.T) {
	d, l := claimDecider(t, loadedEngine(t), nil)
	l.UpsertTemplate(testclaim.Template("team-a", "gpu", wholeGPUClaim("true")))
	other := wholeGPUClaim("true")
	other.Spec.Devices.Requests[0].Exactly.DeviceClassName = "fpga.example.com"
	l.UpsertTemplate(testclaim.Template("team-a", "fpga", other))
	named := testpod.New("p").NS("team-a").App("c", testpod.CPU("1")).Build()
	named.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "g", ResourceClaimName: ptr.To("shared")}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"GPU pod", testpod.New("p").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(1024)).Build(), true},
		{"GPU count alone", testpod.New("p").NS("team-a").App("c", testpod.GPU(1)).Build(), true},
		{"non-GPU pod", testpod.New("p").NS("team-a").App("c", testpod.CPU("1")).Build(), false},
		{"only another vendor's resources", testpod.New("p").NS("team-a").App("c", testpod.Res("example.com/fpga", "1")).Build(), false},
		{"init-only GPU", testpod.New("p").NS("team-a").Init("i", testpod.GPU(1)).App("c", testpod.CPU("1")).Build(), true},
		{"native sidecar GPU", testpod.New("p").NS("team-a").Sidecar("s", testpod.GPU(1)).App("c", testpod.CPU("1")).Build(), true},
		{"DRA claim from a known template of a governed class", testclaim.TemplatePod("team-a", "p", "gpu"), true},
		{"DRA claim from a template of an ungoverned class", testclaim.TemplatePod("team-a", "p", "fpga"), false},
		{"DRA claim from a template the ledger does not know (decided at the claim's create)", testclaim.TemplatePod("team-a", "p", "unknown"), false},
		{"a named claim the ledger does not record (recorded: reviewed for the budgets, TestBudgetPodNamingAnExistingClaim)", named, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := d.Requests(tt.pod); got != tt.want {
				t.Errorf("Requests = %v, want %v", got, tt.want)
			}
		})
	}
}
