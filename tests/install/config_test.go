package install_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// sharedConfig sets non-default decision settings: a lower near-limit
// threshold, and unsatisfiable device requests as warnings.
const sharedConfig = `apiVersion: config.gpuadmit.io/v1alpha1
kind: Configuration
devices:
  nvidia: {defaultGPUNum: 1}
admission:
  nearLimitPercent: 50
  unsatisfiable: Warn
`

// buildCLI builds the gpuadmit command once for the test.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpuadmit")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/gpuadmit").CombinedOutput()
	if err != nil {
		t.Fatalf("building gpuadmit: %v\n%s", err, out)
	}
	return bin
}

// TestConfigSharedWithTheCLI: the webhook (wired from the file exactly as
// cmd/webhook wires it) and `gpuadmit eval --config` (the same file) give
// the same verdicts, denials and warnings for the same pods and cluster.
func TestConfigSharedWithTheCLI(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(sharedConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := local.ForTest(t, "../../manifests/webhook", func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.Config = cfg // wired from the file as cmd/webhook wires it
		return &o
	})
	cli := buildCLI(t)
	ctx := t.Context()
	if err := c.Seed(ctx, "shared", "24576"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePod(ctx, creates.GPUPod("shared", "running", "", 8192)); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, "shared", func(s ledger.NamespaceSnapshot) bool { return s.Pods == 1 && s.Reservations == 0 })
	state, _, err := c.Kubectl(ctx, nil, "get", "pods,nodes,resourcequotas", "-A", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	stateFile := filepath.Join(dir, "state.yaml")
	if err := os.WriteFile(stateFile, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, manifest string }{
		{"past the 50 % threshold", creates.GPUPodYAML("shared", "six", 6144)},
		{"two devices on a one-device node: a warning, not a denial", `apiVersion: v1
kind: Pod
metadata: {name: two, namespace: shared}
spec: {containers: [{name: c, image: registry.example/c:1, resources: {limits: {nvidia.com/gpu: 2, nvidia.com/gpumem: 1000}}}]}
`},
		{"over the quota", creates.GPUPodYAML("shared", "big", 20480)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			podFile := filepath.Join(dir, "pod.yaml")
			if err := os.WriteFile(podFile, []byte(tc.manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, kerr := c.Kubectl(ctx, nil, "create", "--dry-run=server", "-f", podFile)
			var webhookWarnings []string
			var denial string
			for _, line := range strings.Split(stderr, "\n") {
				if w, ok := strings.CutPrefix(line, "Warning: "); ok {
					webhookWarnings = append(webhookWarnings, w)
				}
				if _, d, ok := strings.Cut(line, "denied the request: "); ok {
					denial = d
				}
			}
			out, err := exec.Command(cli, "eval", "-o", "json", "--config", file, "-f", podFile, "--state", stateFile).Output()
			var res struct {
				Allowed  bool     `json:"allowed"`
				Denials  []string `json:"denials"`
				Warnings []string `json:"warnings"`
			}
			if jerr := json.Unmarshal(out, &res); jerr != nil {
				t.Fatalf("eval: %v %v\n%s", err, jerr, out)
			}
			slices.Sort(webhookWarnings)
			slices.Sort(res.Warnings)
			if (kerr == nil) != res.Allowed || !slices.Equal(webhookWarnings, res.Warnings) || denial != strings.Join(res.Denials, "; ") {
				t.Fatalf("webhook: allowed %v, warnings %q, denial %q\n    CLI: allowed %v, warnings %q, denials %q",
					kerr == nil, webhookWarnings, denial, res.Allowed, res.Warnings, res.Denials)
			}
			if len(res.Warnings)+len(res.Denials) == 0 {
				t.Fatal("nothing to compare: the case shows no warning nor denial")
			}
			t.Logf("both: allowed %v, warnings %q, denials %q", res.Allowed, res.Warnings, res.Denials)
		})
	}
}
