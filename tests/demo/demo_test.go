// Package demo_test runs the seed demo (internal/demo/seed, what `make demo`
// prints) on a real control plane, and checks that it fails, rather than
// prints, when what it observes does not hold.
package demo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/demo/seed"
)

func play(t *testing.T, examples string) (string, error) {
	t.Helper()
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	var out bytes.Buffer
	err := seed.Play(t.Context(), c, examples, &out)
	return out.String(), err
}

func TestDemoPrintsWhatItMeasured(t *testing.T) {
	out, err := play(t, "../../examples/pods")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"scenario 1: denied llm-oversize (init 30720 MiB + app 4096 MiB): namespace \"team-a\": nvidia.com/gpumem: pod needs 30720 MiB",
		"scenario 2: allowed llm-server (init 20480 MiB, then app 10240 MiB): effective demand max(10240, 20480) = 20480 MiB, annotated gpuadmit.io/effective={\"gpu\":1,\"gpumem\":20480,\"gpucores\":0}",
		"scenario 3: recorded 20480 MiB for team-a while llm-server's init container convert-weights runs on node1 (not 20480+10240 = 30720)",
		"scenario 4: allowed small-job (12288 MiB) after convert-weights exited 0: llm-server shrank to 10240 MiB, team-a now uses 22528 of 24576 MiB",
		"$ kubectl get gpuusage -n team-a\nNAME    GPU   GPUMEM        GPUCORES   FAMILIES   AGE\nusage   2/-   22528/24576   0/-        ",
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
	out, err := play(t, dir)
	if err == nil || strings.Contains(out, "scenario 4:") {
		t.Fatalf("the demo did not fail: err %v\n%s", err, out)
	}
	t.Logf("failed as it must: %v", err)
}
