package nvmldiscovery_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestGoNVMLConfined: only the node agent links go-nvml (cgo, dlopen of
// libnvidia-ml); the webhook, the CLI and every other package must not,
// directly or through a dependency.
func TestGoNVMLConfined(t *testing.T) {
	allowed := map[string]bool{
		"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery":          true,
		"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery/nvmlmock": true,
		"github.com/gpuadmit/gpuadmit/cmd/nvml-agent":             true,
	}
	out, err := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "github.com/gpuadmit/gpuadmit/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		checked++
		pkg := fields[0]
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, "github.com/NVIDIA/go-nvml/") && !allowed[pkg] {
				t.Errorf("%s depends on %s; only %v may", pkg, dep, allowed)
				break
			}
		}
	}
	if checked < len(allowed) {
		t.Fatalf("go list listed %d packages, want at least %d", checked, len(allowed))
	}
}
