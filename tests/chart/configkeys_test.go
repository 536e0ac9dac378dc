package chart_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/hack/manifestgen"
	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// TestMisspeltDeviceKeysRefused: for every key of the devices section the
// server reads, the key misspelt (its last letter dropped: memoryFacto) is
// refused by the chart, helm template and helm lint alike, with "did you
// mean" and the key, as the server refuses it at start-up; a HAMi key far
// from every key read (vendorNote) renders, and the server accepts it as
// ignored.
func TestMisspeltDeviceKeysRefused(t *testing.T) {
	for _, key := range config.Keys() {
		rest, ok := strings.CutPrefix(key, "devices.")
		if !ok || rest == "hamiConfigPath" || rest == "hamiConfigMap" || strings.HasPrefix(rest, "gpushare.") { // the schema refuses any other key there
			continue
		}
		t.Run(rest, func(t *testing.T) {
			parts := strings.Split(rest, ".")
			meant := parts[len(parts)-1]
			devices := nearMiss(parts, meant[:len(meant)-1])
			doc, err := yaml.Marshal(map[string]any{"config": map[string]any{"devices": devices}})
			if err != nil {
				t.Fatal(err)
			}
			values := writeValues(t, string(doc))
			want := `unknown key "` + meant[:len(meant)-1] + `": did you mean ` + meant + "?"
			if _, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, "-f", values); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("helm template: %v, want %q", err, want)
			}
			hami, err := yaml.Marshal(devices)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := config.Parse(hami); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("the server: %v, want %q", err, want)
			}
		})
	}
	far := writeValues(t, "config:\n  devices:\n    nvidia:\n      vendorNote: 1\n    vnpus:\n      configs:\n        - {chipName: 910B2, vendorNote: 1}\n")
	if _, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, "-f", far); err != nil {
		t.Errorf("a key far from every key read: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), helmBin(t), "lint", chartDir, "--kube-version", minKubeVersion, "-f",
		writeValues(t, "config:\n  devices:\n    nvidia:\n      memoryFactr: 1024\n")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown key \"memoryFactr\": did you mean memoryFactor?`) {
		t.Errorf("helm lint: %v\n%s", err, out)
	}
}

// nearMiss is the devices section holding the misspelt key along the path
// of the key read (parts): a list's entry gets its chipName (required).
func nearMiss(parts []string, typo string) map[string]any {
	var build func(i int) any
	build = func(i int) any {
		if i == len(parts)-1 {
			return map[string]any{typo: "x"}
		}
		name, isList := strings.CutSuffix(parts[i], "[]")
		inner := build(i + 1)
		if isList {
			entry := inner.(map[string]any)
			if name == "templates" {
				entry["name"], entry["memory"] = "vir", 1024
			} else if _, has := entry["chipName"]; !has {
				entry["chipName"] = "910B2"
			}
			inner = []any{entry}
		}
		return map[string]any{name: inner}
	}
	return build(0).(map[string]any)
}
