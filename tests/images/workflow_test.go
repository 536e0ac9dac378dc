package images_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestReleaseWorkflowTargets: every make command of the release workflow
// names targets the Makefile has (make -n: nothing runs), and the workflow
// builds and pushes the images and pushes the chart on a v* tag.
func TestReleaseWorkflowTargets(t *testing.T) {
	wf := string(readFile(t, abs(t, ".github/workflows/release.yml")))
	for _, want := range []string{"tags: ['v*']", "make images", "make push REGISTRY=", "package charts/gpuadmit", "push bin/chart/gpuadmit-", "oci://"} {
		if !strings.Contains(wf, want) {
			t.Errorf("the release workflow has no %q", want)
		}
	}
	calls := regexp.MustCompile(`(?m)^\s*(?:run:\s*)?make ([^\n|&;#]+)$`).FindAllStringSubmatch(wf, -1)
	if len(calls) == 0 {
		t.Fatal("the release workflow runs no make target")
	}
	expr := regexp.MustCompile(`\$\{\{[^}]*\}\}|\$\{?[A-Za-z_]+\}?`)
	for _, c := range calls {
		args := strings.Fields(expr.ReplaceAllString(c[1], "x"))
		out, err := exec.Command("make", append([]string{"-n", "-C", repoRoot}, args...)...).CombinedOutput()
		if err != nil {
			t.Errorf("the release workflow runs make %s: make -n: %v\n%s", c[1], err, out)
		}
	}
}
