package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestParse(t *testing.T) {
	def := effective.DefaultSettings()
	tests := []struct {
		name, in, wantErr string
		want              func(*effective.Settings)
		ignored           []string
	}{
		{name: "empty document keeps defaults", in: ""},
		{name: "comment only", in: "# nothing\n"},
		{name: "HAMi device config with ignored HAMi keys and vendor sections", in: `
nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceMemoryPercentageName: nvidia.com/gpumem-percentage
  resourceCoreName: nvidia.com/gpucores
  resourcePriorityName: nvidia.com/priority
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  memoryFactor: 1024
  deviceSplitCount: 10
  deviceMemoryScaling: 1
  deviceCoreScaling: 1
  knownMigGeometries: []
cambricon:
  resourceCountName: cambricon.com/vmlu
`, want: func(s *effective.Settings) { s.MemoryFactor = 1024 },
			ignored: []string{"cambricon", "nvidia.deviceCoreScaling", "nvidia.deviceMemoryScaling", "nvidia.deviceSplitCount",
				"nvidia.knownMigGeometries", "nvidia.overwriteEnv", "nvidia.resourcePriorityName"}},
		{name: "custom names and defaults", in: `{"nvidia":{"resourceCountName":"example.com/vgpu","resourceMemoryName":"example.com/vmem","defaultMemory":4096,"defaultCores":20,"defaultGPUNum":2}}`,
			want: func(s *effective.Settings) {
				s.Names.Count, s.Names.Memory, s.DefaultMemory, s.DefaultCores, s.DefaultGPUNum = "example.com/vgpu", "example.com/vmem", 4096, 20, 2
			}},
		{name: "unknown nvidia key is ignored, and named", in: "nvidia:\n  memoryFactr: 2\n", ignored: []string{"nvidia.memoryFactr"}},
		{name: "unknown top-level key is ignored, and named", in: "nvida:\n  memoryFactor: 2\n", ignored: []string{"nvida"}},
		{name: "exclusive cores switched off", in: "nvidia:\n  exclusiveCores: false\n", want: func(s *effective.Settings) { s.ExclusiveCores = false }},
		{name: "exclusive cores not a bool", in: "nvidia:\n  exclusiveCores: 1\n", wantErr: "nvidia.exclusiveCores: want true or false, got 1"},
		{name: "string where an integer belongs", in: "nvidia:\n  memoryFactor: two\n", wantErr: `nvidia.memoryFactor: want an integer, got "two"`},
		{name: "fraction", in: "nvidia:\n  defaultMemory: 1.5\n", wantErr: "nvidia.defaultMemory: want an integer, got 1.5"},
		{name: "negative", in: "nvidia:\n  defaultMemory: -1\n", wantErr: "nvidia.defaultMemory: must be >= 0"},
		{name: "cores over 100", in: "nvidia:\n  defaultCores: 101\n", wantErr: "nvidia.defaultCores: must be within 0..100"},
		{name: "negative factor", in: "nvidia:\n  memoryFactor: -1\n", wantErr: "nvidia.memoryFactor: must be >= 0"},
		{name: "empty name", in: "nvidia:\n  resourceMemoryName: \"\"\n", wantErr: "nvidia.resourceMemoryName: want a non-empty resource name"},
		{name: "number as name", in: "nvidia:\n  resourceCoreName: 5\n", wantErr: "nvidia.resourceCoreName: want a non-empty resource name, got 5"},
		{name: "duplicate names", in: "nvidia:\n  resourceCoreName: nvidia.com/gpumem\n", wantErr: "nvidia.resourceCoreName: \"nvidia.com/gpumem\" is already used by nvidia.resourceMemoryName"},
		{name: "nvidia not a mapping", in: "nvidia: 3\n", wantErr: "nvidia: want a mapping"},
		{name: "top level not a mapping", in: "- a\n- b\n", wantErr: "top level: want a mapping"},
		{name: "a Kubernetes object is not a device config", in: "apiVersion: v1\nkind: Pod\n", wantErr: `kind "Pod": not a device configuration`},
		{name: "broken YAML", in: "nvidia: [\n", wantErr: "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ignored, err := config.Parse([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := def
			if tt.want != nil {
				tt.want(&want)
			}
			if cfg.NVIDIA != want {
				t.Errorf("settings = %+v, want %+v", cfg.NVIDIA, want)
			}
			if strings.Join(ignored, ",") != strings.Join(tt.ignored, ",") {
				t.Errorf("ignored = %q, want %q", ignored, tt.ignored)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	cfg, _, err := config.Load("../../examples/config/memory-factor-1024.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NVIDIA.MemoryFactor != 1024 {
		t.Errorf("memoryFactor = %d", cfg.NVIDIA.MemoryFactor)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("nvidia:\n  defaultCores: 500\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := config.Load(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml: nvidia.defaultCores: must be within 0..100") {
		t.Errorf("Load(bad) = %v", err)
	}
	if _, _, err := config.Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "reading config") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// TestHAMiChartConfigs: the device configs HAMi's chart renders with its
// default values (testdata: the current v2.10 line and an older v2.6-era
// release) load, read HAMi's defaults, and name every key gpuadmit ignores.
func TestHAMiChartConfigs(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string // some of the ignored keys
	}{
		{"hami-chart-v2.10.yaml", []string{"amd", "biren", "vastai", "vnpus", "nvidia.runtimeClassName",
			"nvidia.enableNumaTopology", "nvidia.migProfileAllowlist", "nvidia.preConfiguredDeviceMemory"}},
		{"hami-chart-v2.6.yaml", []string{"iluvatar", "nvidia.knownMigGeometries", "nvidia.gpuCorePolicy"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			cfg, ignored, err := config.Load(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.NVIDIA != effective.DefaultSettings() {
				t.Errorf("settings = %+v, want HAMi's defaults", cfg.NVIDIA)
			}
			for _, w := range tt.want {
				if !slices.Contains(ignored, w) {
					t.Errorf("ignored %q does not name %q", ignored, w)
				}
			}
			for _, read := range []string{"nvidia.resourceCountName", "nvidia.defaultMemory", "nvidia.memoryFactor"} {
				if slices.Contains(ignored, read) {
					t.Errorf("%s is read, but reported as ignored", read)
				}
			}
		})
	}
}
