// Package layering_test keeps the request path going one way, down:
// server -> admission -> decision -> cache -> effective. A package may
// depend on the ones below it, never on one above; pkg/effective depends on
// nothing of the project.
package layering_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gpuadmit/gpuadmit/"

// TestRequestPathGoesDown lists every package's dependencies (go list
// -deps) and fails on an edge that climbs.
func TestRequestPathGoesDown(t *testing.T) {
	forbidden := map[string][]string{
		"pkg/effective": {"pkg/", "policy", "internal/", "cmd/"},
		"pkg/config":    {"pkg/ledger", "pkg/decision", "pkg/admission", "pkg/server", "policy"},
		"pkg/ledger":    {"pkg/decision", "pkg/admission", "pkg/server", "policy"},
		"policy":        {"pkg/ledger", "pkg/decision", "pkg/admission", "pkg/server"},
		"pkg/decision":  {"pkg/admission", "pkg/server"},
		"pkg/admission": {"pkg/server"},
		// The HTTPS server knows nothing of admission: it only bounds and authenticates.
		"pkg/webhookserver": {"pkg/", "policy", "internal/", "cmd/"},
	}
	checked := 0
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		checked++
		for _, dep := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(dep, module)
			if !ok || rel == pkg {
				continue
			}
			for _, b := range bad {
				if strings.HasPrefix(rel, b) {
					t.Errorf("%s depends on %s: the request path must not climb (server -> admission -> decision -> cache -> effective)", pkg, rel)
				}
			}
		}
	}
	if checked != len(forbidden) {
		t.Fatalf("checked %d packages", checked)
	}
}
