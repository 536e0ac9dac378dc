package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
)

// team-c runs HAMi-DRA: its quota holds 16384 MiB of GPU memory, 12288 of
// them claimed by the claim hami-train (created through the webhook);
// the template gpu-2g makes claims of 2048 MiB; node1's HAMi-DRA driver
// publishes its GPU in a ResourceSlice.
const (
	teamC     = "team-c"
	teamCMiB  = "16384"
	trainMiB  = 12288
	hamiSlice = "node1-hami-core-gpu"
)

// seedDRA creates team-c's quota, HAMi-DRA's DeviceClass, node1's
// ResourceSlice, the template and the claim (decided by the webhook).
func (s *suite) seedDRA(ctx context.Context) error {
	if err := s.c.Seed(ctx, teamC, teamCMiB); err != nil {
		return err
	}
	api := s.c.Kube.ResourceV1()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: testclaim.HAMiDRAClass},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", testclaim.HAMiDRAClass)}}}}}
	if _, err := api.DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the DeviceClass: %w", err)
	}
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: hamiSlice},
		Spec: resourcev1.ResourceSliceSpec{Driver: testclaim.HAMiDRAClass, NodeName: ptr.To(local.NodeName),
			Pool: resourcev1.ResourcePool{Name: local.NodeName, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0",
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: ptr.To("hami-gpu")}},
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
					"memory": {Value: resource.MustParse("24Gi")}, "cores": {Value: resource.MustParse("100")}}}}}}
	if _, err := api.ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ResourceSlice: %w", err)
	}
	tmpl := testclaim.Template(teamC, "gpu-2g", testclaim.HAMiDRA(teamC, "", 1, 2048, 20))
	if _, err := api.ResourceClaimTemplates(teamC).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ResourceClaimTemplate: %w", err)
	}
	if _, err := api.ResourceClaims(teamC).Create(ctx, testclaim.HAMiDRA(teamC, "hami-train", 1, trainMiB, 0), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the claim through the webhook: %w", err)
	}
	return nil
}

// yamlFile writes obj as YAML into a file of the test's and returns its path.
func yamlFile(t *testing.T, name string, obj any) string {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testEvalLiveIsTheDump: eval of a HAMi-DRA claim, and of a pod of the
// template, answers from the cluster what it answers from the dump state.
func (s *suite) testEvalLiveIsTheDump(t *testing.T, state string) {
	claim := testclaim.HAMiDRA(teamC, "hami-infer", 1, 8192, 30)
	claim.APIVersion, claim.Kind = resourcev1.SchemeGroupVersion.String(), "ResourceClaim"
	pod := testclaim.TemplatePod(teamC, "notebook", "gpu-2g")
	pod.APIVersion, pod.Kind = "v1", "Pod"
	claimFile, podFile := yamlFile(t, "claim", claim), yamlFile(t, "pod", pod)
	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{name: "a HAMi-DRA claim over team-c's limit", args: []string{"eval", "-o", "json", "-f", claimFile}, wantCode: 1,
			wantOut: []string{`"kind": "ResourceClaim"`, `claim needs 8192 MiB, 12288 MiB used + 0 MiB reserved, limit 16384 MiB`}},
		{name: "a pod of the template gpu-2g", args: []string{"eval", "-o", "json", "-f", podFile},
			wantOut: []string{`"allowed": true`, `"gpumem": 2048`, `"gpucores": 20`}},
		// The pod's admission checks its template's claim but reserves only its
		// containers (none): the claim is decided when the claim controller
		// creates it, so the claim after it sees the namespace's 12288 MiB.
		{name: "both, one after the other", args: []string{"eval", "-f", podFile, "-f", claimFile, "-o", "table"}, wantCode: 1,
			wantOut: []string{"claim needs 8192 MiB, 12288 MiB used"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live := s.plugin(t, tt.args...)
			fromDump := s.plugin(t, append(tt.args, "--state", state)...)
			if live.code != tt.wantCode || fromDump.code != tt.wantCode || live.stderr != evalLine || fromDump.stderr != "" {
				t.Fatalf("live: exit %d, stderr %q (want %q); --state: exit %d, stderr %q; want exit %d",
					live.code, live.stderr, evalLine, fromDump.code, fromDump.stderr, tt.wantCode)
			}
			if live.stdout != fromDump.stdout {
				t.Errorf("live:\n%s\n--state on a dump:\n%s", live.stdout, fromDump.stdout)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(live.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, live.stdout)
				}
			}
		})
	}
}
