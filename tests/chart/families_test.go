package chart_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestEveryFamilyReachesTheWebhooks: with HAMi's whole device config pasted
// under config.devices (ci/hami-devices-values.yaml), and with every section
// present but empty (HAMi's default names, which the chart's helper repeats),
// Ascend and Iluvatar switched on, the webhooks' matchConditions name exactly
// the resources of the families the rendered configuration governs.
func TestEveryFamilyReachesTheWebhooks(t *testing.T) {
	for name, args := range map[string][]string{
		"HAMi's rendered config": {"-f", chartDir + "/ci/hami-devices-values.yaml"},
		"every section empty":    everySectionEmpty(),
	} {
		t.Run(name, func(t *testing.T) {
			objs := render(t, args...)
			cfg, _, err := config.Parse([]byte(nested(t, find(objs, "ConfigMap", "gpuadmit-config"), "data", "config.yaml")))
			if err != nil {
				t.Fatalf("the rendered configuration is not one the server accepts: %v", err)
			}
			fams := config.Families(cfg)
			if len(fams) != len(effective.HAMiFamilies())+1 {
				t.Errorf("%d families governed, want every HAMi family and gpushare", len(fams))
			}
			var want []string
			for _, f := range fams {
				for _, n := range []string{string(f.Names.Count), string(f.Names.Memory), string(f.Names.MemoryPercentage), string(f.Names.Cores)} {
					if n != "" {
						want = append(want, n)
					}
				}
			}
			slices.Sort(want)
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				for _, got := range matchedNames(t, find(objs, kind, "gpuadmit")) {
					if slices.Sort(got); !slices.Equal(got, want) {
						t.Errorf("%s matchConditions name\n%v\nthe families\n%v", kind, got, want)
					}
				}
			}
		})
	}
}

// everySectionEmpty are helm arguments setting every HAMi section and
// gpushare to {}, listing every chip of HAMi's chart by its name alone, and
// switching Ascend and Iluvatar on.
func everySectionEmpty() []string {
	args := []string{"--set-json", "config.devices.gpushare={}",
		"--set-json", `config.devices.ascend={"enabled":true}`, "--set-json", `config.devices.iluvatar={"enabled":true}`}
	for _, s := range []string{"cambricon", "hygon", "metax", "enflame", "mthreads", "kunlun", "awsneuron", "amd", "vastai", "biren"} {
		args = append(args, "--set-json", "config.devices."+s+"={}")
	}
	chips := map[string][]string{}
	for _, f := range effective.HAMiFamilies() {
		if list, chip, ok := strings.Cut(strings.TrimSuffix(f.Section, "]"), "["); ok {
			chips[list] = append(chips[list], `{"chipName":"`+chip+`"}`)
		}
	}
	return append(args, "--set-json", "config.devices.iluvatars=["+strings.Join(chips["iluvatars"], ",")+"]",
		"--set-json", `config.devices.vnpus={"configs":[`+strings.Join(chips["vnpus"], ",")+"]}")
}

// matchedNames are the lists of resource names a webhook configuration's
// matchCondition names.
func matchedNames(t *testing.T, h *unstructured.Unstructured) [][]string {
	t.Helper()
	mc := h.Object["webhooks"].([]any)[0].(map[string]any)["matchConditions"].([]any)[0].(map[string]any)
	expr := nested(t, &unstructured.Unstructured{Object: mc}, "expression")
	var out [][]string
	for _, list := range regexp.MustCompile(`\[('[^\]]*)\]`).FindAllStringSubmatch(expr, -1) {
		var got []string
		for _, q := range strings.Split(list[1], ", ") {
			got = append(got, strings.Trim(q, "'"))
		}
		out = append(out, got)
	}
	return out
}
