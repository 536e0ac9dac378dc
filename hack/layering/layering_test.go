// Package layering_test keeps the request path going one way, down:
// server -> admission -> gpuusage (the reservation store) -> decision ->
// ledger -> reservation -> effective, with membership beside gpuusage. A package may
// depend on the ones below it, never on one above; pkg/effective depends on
// nothing of the project. No package of pkg/ and no production command
// (cmd/webhook, cmd/gpuadmit, cmd/nvml-agent) depends on test support
// (internal/: fixtures, cluster harnesses, the webhook's test hooks) or on
// build tooling (hack/).
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
		"pkg/effective": {"pkg/", "policy", "internal/", "hack/", "cmd/"},
		"pkg/config":    {"pkg/ledger", "pkg/decision", "pkg/admission", "pkg/server", "policy"},
		// A claim's demand is pure translation beside pkg/effective.
		"pkg/dra":      {"pkg/ledger", "pkg/decision", "pkg/gpuusage", "pkg/admission", "pkg/server", "pkg/config", "pkg/devices", "policy", "internal/", "hack/", "cmd/"},
		"pkg/ledger":   {"pkg/decision", "pkg/gpuusage", "pkg/membership", "pkg/admission", "pkg/server", "policy"},
		"policy":       {"pkg/ledger", "pkg/decision", "pkg/admission", "pkg/server", "internal/", "hack/", "cmd/", "tests/"},
		"pkg/decision": {"pkg/gpuusage", "pkg/membership", "pkg/admission", "pkg/server"},

		// The reservation concept (its type, counting rule, validation,
		// assumed copies) sits below the ledger, which counts what it is
		// handed; it knows only the API types, pkg/effective and
		// resourceVersions.
		"pkg/reservation": {"pkg/ledger", "pkg/decision", "pkg/gpuusage", "pkg/membership", "pkg/admission", "pkg/server", "pkg/openreports", "pkg/clusterstate", "policy", "internal/", "hack/", "cmd/"},
		// The summaries users read: an output of the ledger and the
		// reservations, nothing on the request path.
		"pkg/summary": {"pkg/gpuusage", "pkg/decision", "pkg/membership", "pkg/admission", "pkg/server", "policy", "internal/", "hack/", "cmd/"},

		// The reservation store decides through the decision, below it;
		// the replicas' membership knows neither.
		"pkg/gpuusage":   {"pkg/membership", "pkg/admission", "pkg/server"},
		"pkg/membership": {"pkg/gpuusage", "pkg/decision", "pkg/admission", "pkg/server", "policy"},
		"pkg/admission":  {"pkg/server"},
		// The Reports are an output of the ledger, beside the summaries:
		// nothing on the request path.
		"pkg/openreports": {"pkg/decision", "pkg/gpuusage", "pkg/membership", "pkg/admission", "pkg/server", "policy"},
		// The HTTPS server knows nothing of admission: it only bounds and authenticates.
		"pkg/webhookserver": {"pkg/", "policy", "internal/", "hack/", "cmd/"},
		// What ships: no test support, no build tooling. cmd/webhook's
		// fault-injection flags come only with the gpuadmit_testhooks tag
		// (go list sees the production build).
		"pkg/...":        {"internal/", "hack/", "cmd/", "tests/"},
		"cmd/webhook":    {"internal/", "hack/", "tests/"},
		"cmd/gpuadmit":   {"internal/", "hack/", "tests/"},
		"cmd/nvml-agent": {"internal/", "hack/", "tests/"},
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
					t.Errorf("%s depends on %s: the request path must not climb (server -> admission -> decision -> ledger -> effective), and what ships must not carry test support or build tooling", pkg, rel)
				}
			}
		}
	}
	if checked != len(forbidden) {
		t.Fatalf("checked %d packages", checked)
	}
}
