package config_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// configMaps is a fake API server's ConfigMaps by namespace/name; gets
// records what was asked.
type configMaps struct {
	data map[string]map[string]string
	gets []string
}

func (c *configMaps) get(_ context.Context, ns, name string) (map[string]string, error) {
	c.gets = append(c.gets, ns+"/"+name)
	d, ok := c.data[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return d, nil
}

// TestReadHAMiConfigMap: devices.hamiConfigMap is read through the API
// server, from its namespace or the webhook's, and governs what HAMi's
// file governs (gpushare beside it); every way it can be missing or wrong
// is an error naming the ConfigMap, never a configuration left governing
// nvidia's defaults alone (which would leave every other family's quota
// unenforced).
func TestReadHAMiConfigMap(t *testing.T) {
	hami, err := os.ReadFile("testdata/hami-chart-rendered.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bare, _, err := config.Load("testdata/hami-chart-rendered.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := append(config.Families(bare), config.Families(mustParse(t, head+"devices: {gpushare: {memoryUnit: GiB}}\n"))[1])
	tests := []struct {
		name, ref string
		data      map[string]map[string]string
		wantGet   string
		wantErr   string
	}{
		{name: "namespace/name", ref: "kube-system/hami-scheduler-device", wantGet: "kube-system/hami-scheduler-device",
			data: map[string]map[string]string{"kube-system/hami-scheduler-device": {"device-config.yaml": string(hami)}}},
		{name: "name: the webhook's namespace", ref: "hami-scheduler-device", wantGet: "gpuadmit-system/hami-scheduler-device",
			data: map[string]map[string]string{"gpuadmit-system/hami-scheduler-device": {"device-config.yaml": string(hami)}}},
		{name: "missing ConfigMap", ref: "kube-system/hami-scheduler-device", wantGet: "kube-system/hami-scheduler-device",
			wantErr: `devices.hamiConfigMap: ConfigMap kube-system/hami-scheduler-device (HAMi's device config): configmaps "hami-scheduler-device" not found`},
		{name: "another namespace's ConfigMap only", ref: "hami-scheduler-device", wantGet: "gpuadmit-system/hami-scheduler-device",
			data:    map[string]map[string]string{"kube-system/hami-scheduler-device": {"device-config.yaml": string(hami)}},
			wantErr: "ConfigMap gpuadmit-system/hami-scheduler-device (HAMi's device config): configmaps"},
		{name: "missing key", ref: "kube-system/hami", wantGet: "kube-system/hami",
			data:    map[string]map[string]string{"kube-system/hami": {"config.yaml": string(hami)}},
			wantErr: "ConfigMap kube-system/hami has no key device-config.yaml"},
		{name: "not YAML", ref: "kube-system/hami", wantGet: "kube-system/hami",
			data:    map[string]map[string]string{"kube-system/hami": {"device-config.yaml": "nvidia: [\n"}},
			wantErr: "ConfigMap kube-system/hami, key device-config.yaml: not valid YAML"},
		{name: "a wrong value", ref: "kube-system/hami", wantGet: "kube-system/hami",
			data:    map[string]map[string]string{"kube-system/hami": {"device-config.yaml": "nvidia: {memoryFactor: many}\n"}},
			wantErr: "nvidia.memoryFactor"},
		{name: "an invalid value", ref: "kube-system/hami", wantGet: "kube-system/hami",
			data:    map[string]map[string]string{"kube-system/hami": {"device-config.yaml": "nvidia: {memoryFactor: -1}\n"}},
			wantErr: "devices.hamiConfigMap: ConfigMap kube-system/hami: devices.nvidia.memoryFactor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustParse(t, head+"devices: {hamiConfigMap: "+tt.ref+", gpushare: {memoryUnit: GiB}}\n")
			if got := config.Families(cfg); len(got) != 2 {
				t.Fatalf("before the ConfigMap is read: %d families, want nvidia and gpushare", len(got))
			}
			cms := &configMaps{data: tt.data}
			_, err := config.ReadHAMiConfigMap(context.Background(), cfg, "gpuadmit-system", cms.get)
			if !slices.Equal(cms.gets, []string{tt.wantGet}) {
				t.Errorf("read %q, want %q", cms.gets, tt.wantGet)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := config.Families(cfg); !slices.Equal(got, want) {
				t.Errorf("read from the ConfigMap, the families\n%+v\nwant HAMi's file's and gpushare\n%+v", got, want)
			}
		})
	}
}

// TestReadHAMiConfigMapNone: without devices.hamiConfigMap nothing is read
// and the configuration is left as it is.
func TestReadHAMiConfigMapNone(t *testing.T) {
	cfg := mustParse(t, head+"devices: {amd: {}}\n")
	before := config.Families(cfg)
	cms := &configMaps{}
	if _, err := config.ReadHAMiConfigMap(context.Background(), cfg, "gpuadmit-system", cms.get); err != nil || len(cms.gets) > 0 {
		t.Fatalf("read %q: %v", cms.gets, err)
	}
	if !slices.Equal(config.Families(cfg), before) {
		t.Error("the families changed")
	}
}

// TestHAMiConfigMapRefused: devices.hamiConfigMap names one ConfigMap,
// validly, and stands alone (gpushare beside it).
func TestHAMiConfigMapRefused(t *testing.T) {
	for in, want := range map[string]string{
		"{hamiConfigMap: kube-system/hami, nvidia: {}}":                  "devices: hamiConfigMap excludes inline keys",
		"{hamiConfigMap: kube-system/hami, hamiConfigPath: x.yaml}":      "hamiConfigPath and hamiConfigMap exclude each other",
		"{hamiConfigMap: Kube_System/hami}":                              "devices.hamiConfigMap: Invalid value",
		"{hamiConfigMap: kube-system/}":                                  "want a ConfigMap as namespace/name or name",
		"{hamiConfigMap: /hami}":                                         "want a ConfigMap as namespace/name or name",
		"{hamiConfigMap: a/b/c}":                                         "want a ConfigMap as namespace/name or name",
		"{hamiConfigMap: \"\"}":                                          "devices.hamiConfigMap: want a ConfigMap",
		"{hamiConfigMap: [kube-system, hami]}":                           "devices.hamiConfigMap: want a ConfigMap",
		"{hamiConfigMap: kube-system/hami, gpushare: {memoryUnit: KiB}}": "devices.gpushare.memoryUnit",
	} {
		if _, _, err := config.Parse([]byte(head + "devices: " + in + "\n")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("devices: %s: error %v, want %q", in, err, want)
		}
	}
}

func mustParse(t *testing.T, text string) *config.Configuration {
	t.Helper()
	cfg, _, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return cfg
}

// TestReadHAMiConfigMapKeepsTheSwitches: the ascend and iluvatar switches
// written beside devices.hamiConfigMap (as the chart renders them) govern
// HAMi's vnpus and iluvatars sections read from the ConfigMap exactly as
// they do beside devices.hamiConfigPath: reading the ConfigMap must not
// switch them back off (a red-team finding: the chart sent Ascend's pods to
// the webhook, which then charged them nothing).
func TestReadHAMiConfigMapKeepsTheSwitches(t *testing.T) {
	hami, err := os.ReadFile("testdata/hami-chart-rendered.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("testdata/hami-chart-rendered.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(head+"devices: {hamiConfigPath: "+abs+", ascend: {enabled: true}, iluvatar: {enabled: true}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	byPath, _, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustParse(t, head+"devices: {hamiConfigMap: kube-system/hami-scheduler-device, ascend: {enabled: true}, iluvatar: {enabled: true}}\n")
	cms := &configMaps{data: map[string]map[string]string{"kube-system/hami-scheduler-device": {"device-config.yaml": string(hami)}}}
	if _, err := config.ReadHAMiConfigMap(context.Background(), cfg, "gpuadmit-system", cms.get); err != nil {
		t.Fatal(err)
	}
	names := func(c *config.Configuration) (out []string) {
		for _, f := range config.Families(c) {
			out = append(out, f.Name)
		}
		return out
	}
	got, want := names(cfg), names(byPath)
	for _, prefix := range []string{"ascend", "iluvatar"} {
		if !slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, prefix) }) {
			t.Errorf("switched on beside the ConfigMap, no %s family is governed: %v", prefix, got)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("families from the ConfigMap %v, from the file %v", got, want)
	}
	if w := config.SwitchedOffWarning(cfg); w != "" {
		t.Errorf("switched on, yet warned: %s", w)
	}
}
