package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// parseCase is one document for config.Parse and what it must give.
type parseCase struct {
	name, in, wantErr string
	want              func(*config.Configuration) // changes to the defaults
	ignored           []string                    // nil: not checked
}

func (tt parseCase) check(t *testing.T) {
	t.Helper()
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
	want := config.Default()
	if tt.want != nil {
		tt.want(&want)
	}
	if cfg != want {
		t.Errorf("config\n%+v\nwant\n%+v", cfg, want)
	}
	if tt.ignored != nil && strings.Join(ignored, ",") != strings.Join(tt.ignored, ",") {
		t.Errorf("ignored = %q, want %q", ignored, tt.ignored)
	}
}

// devices changes the device settings of the defaults.
func devices(f func(*effective.Settings)) func(*config.Configuration) {
	return func(c *config.Configuration) { f(&c.Devices) }
}

func TestParse(t *testing.T) {
	tests := []parseCase{
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
`, want: devices(func(s *effective.Settings) { s.MemoryFactor = 1024 }),
			ignored: []string{"cambricon", "nvidia.deviceCoreScaling", "nvidia.deviceMemoryScaling", "nvidia.deviceSplitCount",
				"nvidia.knownMigGeometries", "nvidia.overwriteEnv", "nvidia.resourcePriorityName"}},
		{name: "custom names and defaults", in: `{"nvidia":{"resourceCountName":"example.com/vgpu","resourceMemoryName":"example.com/vmem","defaultMemory":4096,"defaultCores":20,"defaultGPUNum":2}}`,
			want: devices(func(s *effective.Settings) {
				s.Names.Count, s.Names.Memory, s.DefaultMemory, s.DefaultCores, s.DefaultGPUNum = "example.com/vgpu", "example.com/vmem", 4096, 20, 2
			})},
		{name: "unknown nvidia key is ignored, and named", in: "nvidia:\n  memoryFactr: 2\n", ignored: []string{"nvidia.memoryFactr"}},
		{name: "unknown top-level key is ignored, and named", in: "nvida:\n  memoryFactor: 2\n", ignored: []string{"nvida"}},
		{name: "exclusive cores switched off", in: "nvidia:\n  exclusiveCores: false\n", want: devices(func(s *effective.Settings) { s.ExclusiveCores = false })},
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
		{name: "a Kubernetes object is not a configuration", in: "apiVersion: v1\nkind: Pod\n", wantErr: `apiVersion "v1", kind "Pod": want apiVersion config.gpuadmit.io/v1alpha1, kind Configuration`},
		{name: "broken YAML", in: "nvidia: [\n", wantErr: "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestLoad(t *testing.T) {
	cfg, _, err := config.Load("../../examples/config/memory-factor-1024.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Devices.MemoryFactor != 1024 {
		t.Errorf("memoryFactor = %d", cfg.Devices.MemoryFactor)
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
			if cfg.Devices != effective.DefaultSettings() {
				t.Errorf("settings = %+v, want HAMi's defaults", cfg.Devices)
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

// TestVersionedConfiguration: the versioned file, defaulted in one place,
// every bad value an error naming its key.
func TestVersionedConfiguration(t *testing.T) {
	const head = "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\n"
	tests := []parseCase{
		{name: "empty: every default", in: head},
		{name: "every key", in: head + `devices:
  nvidia:
    resourceMemoryName: example.com/vmem
    memoryFactor: 1024
    exclusiveCores: false
    deviceSplitCount: 10
  cambricon: {}
admission:
  nearLimitPercent: 75
  unsatisfiable: Warn
  policyEvaluationTimeout: 250ms
  reviewTimeout: 3s
  staleFeed: Deny
  reservations: {confirmAfter: 2s, recheckMax: 10s, readsPerSecond: 5, maxPerNamespace: 50}
  watches: {probeEvery: 5s, staleAfter: 1m}
policy:
  configMapSelector: team=gpu
  directory: /etc/gpuadmit/policies
`, ignored: []string{"devices.cambricon", "devices.nvidia.deviceSplitCount"}, want: func(c *config.Configuration) {
			c.Devices.Names.Memory, c.Devices.MemoryFactor, c.Devices.ExclusiveCores = "example.com/vmem", 1024, false
			c.Admission = config.Admission{NearLimitPercent: 75, Unsatisfiable: "Warn", PolicyEvaluationTimeout: 250 * time.Millisecond, ReviewTimeout: 3 * time.Second, StaleFeed: "Deny",
				Reservations: config.Reservations{ConfirmAfter: 2 * time.Second, RecheckMax: 10 * time.Second, ReadsPerSecond: 5, MaxPerNamespace: 50},
				Watches:      config.Watches{ProbeEvery: 5 * time.Second, StaleAfter: time.Minute}}
			c.Policy = config.Policy{ConfigMapSelector: "team=gpu", Directory: "/etc/gpuadmit/policies"}
		}},
		{name: "a HAMi device config by path", in: head + "devices: {hamiConfigPath: testdata/hami-chart-v2.10.yaml}\n",
			ignored: nil},
		{name: "unknown admission key", in: head + "admission: {nearLimitPrecent: 80}\n", wantErr: `unknown key "nearLimitPrecent"`},
		{name: "unknown top-level key", in: head + "admision: {}\n", wantErr: `unknown key "admision"`},
		{name: "near-limit out of range", in: head + "admission: {nearLimitPercent: 120}\n", wantErr: "admission.nearLimitPercent: must be within 1..100, got 120"},
		{name: "unsatisfiable", in: head + "admission: {unsatisfiable: maybe}\n", wantErr: `admission.unsatisfiable: want Deny or Warn, got "maybe"`},
		{name: "stale feed", in: head + "admission: {staleFeed: Ignore}\n", wantErr: `admission.staleFeed: want Reservations or Deny, got "Ignore"`},
		{name: "duration", in: head + "admission: {reservations: {confirmAfter: five}}\n", wantErr: `admission.reservations.confirmAfter: want a duration such as 5s or 1m30s, got "five"`},
		{name: "negative duration", in: head + "admission: {policyEvaluationTimeout: -1s}\n", wantErr: "admission.policyEvaluationTimeout: must be positive"},
		{name: "reservations bound", in: head + "admission: {reservations: {maxPerNamespace: 0}}\n", wantErr: "admission.reservations.maxPerNamespace: must be within 1..5000"},
		{name: "negative confirm", in: head + "admission: {reservations: {confirmAfter: -1s}}\n", wantErr: "admission.reservations.confirmAfter: must not be negative"},
		{name: "recheck below confirm", in: head + "admission: {reservations: {confirmAfter: 10s, recheckMax: 5s}}\n", wantErr: "admission.reservations.recheckMax: must be at least confirmAfter"},
		{name: "stale before a probe", in: head + "admission: {watches: {probeEvery: 1m, staleAfter: 30s}}\n", wantErr: "admission.watches.staleAfter: must be longer than probeEvery"},
		{name: "selector", in: head + "policy: {configMapSelector: \"a in (\"}\n", wantErr: "policy.configMapSelector:"},
		{name: "device key", in: head + "devices: {nvidia: {defaultCores: 101}}\n", wantErr: "devices.nvidia.defaultCores: must be within 0..100"},
		{name: "path and inline keys", in: head + "devices: {hamiConfigPath: x.yaml, nvidia: {}}\n", wantErr: "devices: hamiConfigPath excludes inline keys"},
		{name: "missing HAMi file", in: head + "devices: {hamiConfigPath: nope.yaml}\n", wantErr: "devices.hamiConfigPath: open nope.yaml"},
		{name: "wrong version", in: "apiVersion: config.gpuadmit.io/v2\nkind: Configuration\n", wantErr: `apiVersion "config.gpuadmit.io/v2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestDefaultsInOnePlace: Default is SetDefaults of nothing, and every
// default is valid.
func TestDefaultsInOnePlace(t *testing.T) {
	var c config.Configuration
	config.SetDefaults(&c)
	if c != config.Default() {
		t.Errorf("SetDefaults(zero) = %+v, Default() = %+v", c, config.Default())
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the defaults are invalid: %v", err)
	}
	if c.Admission.NearLimitPercent != 90 || c.Admission.Reservations.ConfirmAfter != 0 || c.Admission.Reservations.MaxPerNamespace != 500 ||
		c.Policy.ConfigMapSelector != "gpuadmit.io/policy=true" || c.Admission.Unsatisfiable != "Deny" {
		t.Errorf("defaults: %+v", c)
	}
}

// TestShippedConfiguration: the configuration the manifests install is
// valid and spells out exactly the defaults.
func TestShippedConfiguration(t *testing.T) {
	raw, err := os.ReadFile("../../manifests/webhook/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	cfg, ignored, err := config.Parse([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if cfg != config.Default() || len(ignored) != 0 {
		t.Errorf("shipped configuration %+v (ignored %q) differs from the defaults %+v", cfg, ignored, config.Default())
	}
}
