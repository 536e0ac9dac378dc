package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

const head = "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\n"

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
		tt.want(want)
	}
	cfg.Devices.Ignored = nil
	if cfg.Devices.HAMiConfigPath != nil {
		want.Devices.HAMiConfigPath = cfg.Devices.HAMiConfigPath
	}
	if !equality.Semantic.DeepEqual(cfg, want) {
		t.Errorf("config\n%s\nwant\n%s", dump(cfg), dump(want))
	}
	if tt.ignored != nil && strings.Join(ignored, ",") != strings.Join(tt.ignored, ",") {
		t.Errorf("ignored = %q, want %q", ignored, tt.ignored)
	}
}

func dump(c *config.Configuration) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// settings changes the device settings of the defaults.
func settings(f func(*configv1alpha1.NvidiaDevices)) func(*config.Configuration) {
	return func(c *config.Configuration) { f(c.Devices.Nvidia) }
}

func TestParseHAMiDeviceConfig(t *testing.T) {
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
  sharing: true
`, want: func(c *config.Configuration) {
			c.Devices.Nvidia.MemoryFactor = ptr.To[int64](1024)
			c.Devices.Cambricon = cambriconDefaults()
		},
			ignored: []string{"cambricon.sharing", "nvidia.deviceCoreScaling", "nvidia.deviceMemoryScaling", "nvidia.deviceSplitCount",
				"nvidia.knownMigGeometries", "nvidia.overwriteEnv", "nvidia.resourcePriorityName"}},
		{name: "custom names and defaults", in: `{"nvidia":{"resourceCountName":"example.com/vgpu","resourceMemoryName":"example.com/vmem","defaultMemory":4096,"defaultCores":20,"defaultGPUNum":2}}`,
			want: settings(func(n *configv1alpha1.NvidiaDevices) {
				n.ResourceCountName, n.ResourceMemoryName = ptr.To("example.com/vgpu"), ptr.To("example.com/vmem")
				n.DefaultMemory, n.DefaultCores, n.DefaultGPUNum = ptr.To[int64](4096), ptr.To[int64](20), ptr.To[int64](2)
			})},
		{name: "unknown nvidia key far from any key gpuadmit reads is ignored, and named", in: "nvidia:\n  vendorNote: 2\n", ignored: []string{"nvidia.vendorNote"}},
		{name: "unknown top-level key far from any section is ignored, and named", in: "nvlink:\n  memoryFactor: 2\n", ignored: []string{"nvlink"}},
		{name: "exclusive cores switched off", in: "nvidia:\n  exclusiveCores: false\n",
			want: settings(func(n *configv1alpha1.NvidiaDevices) { n.ExclusiveCores = ptr.To(false) })},
		{name: "exclusive cores not a bool", in: "nvidia:\n  exclusiveCores: 1\n", wantErr: "nvidia.exclusiveCores: want true or false, got 1"},
		{name: "string where an integer belongs", in: "nvidia:\n  memoryFactor: two\n", wantErr: `nvidia.memoryFactor: want an integer, got "two"`},
		{name: "fraction", in: "nvidia:\n  defaultMemory: 1.5\n", wantErr: "nvidia.defaultMemory: want an integer, got 1.5"},
		{name: "negative", in: "nvidia:\n  defaultMemory: -1\n", wantErr: "devices.nvidia.defaultMemory: Invalid value: -1: must be >= 0"},
		{name: "cores over 100", in: "nvidia:\n  defaultCores: 101\n", wantErr: "devices.nvidia.defaultCores: Invalid value: 101: must be within 0..100"},
		{name: "negative factor", in: "nvidia:\n  memoryFactor: -1\n", wantErr: "devices.nvidia.memoryFactor: Invalid value: -1: must be >= 0"},
		{name: "empty name", in: "nvidia:\n  resourceMemoryName: \"\"\n", wantErr: "devices.nvidia.resourceMemoryName: Required value"},
		{name: "number as name", in: "nvidia:\n  resourceCoreName: 5\n", wantErr: "nvidia.resourceCoreName: want a resource name, got 5"},
		{name: "duplicate names", in: "nvidia:\n  resourceCoreName: nvidia.com/gpumem\n",
			wantErr: `devices.nvidia.resourceCoreName: Duplicate value: "nvidia.com/gpumem (already devices.nvidia.resourceMemoryName)"`},
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
	if config.Settings(cfg).MemoryFactor != 1024 {
		t.Errorf("memoryFactor = %d", config.Settings(cfg).MemoryFactor)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("nvidia:\n  defaultCores: 500\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := config.Load(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml: devices.nvidia.defaultCores: Invalid value: 500") {
		t.Errorf("Load(bad) = %v", err)
	}
	if _, _, err := config.Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "reading config") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// TestHAMiChartConfigs: the device configs HAMi's chart renders with its
// default values (testdata, written by hand: the v2.10 line and an older
// v2.6-era release) load, read HAMi's defaults, govern every section's
// families, and name every key gpuadmit ignores.
func TestHAMiChartConfigs(t *testing.T) {
	for _, tt := range []struct {
		file     string
		want     []string // some of the ignored keys
		families int
	}{
		// Ascend's 7 chips and Iluvatar's 4 are not governed: HAMi's chart
		// starts neither backend by default (TestBackendSwitches).
		{"hami-chart-v2.10.yaml", []string{"vnpus.hamiVnpuCore", "vnpus[910A].runtimeClassName", "metax.sgpuTopologyAware",
			"mthreads.memoryPerCard", "nvidia.runtimeClassName", "nvidia.enableNumaTopology", "nvidia.migProfileAllowlist",
			"nvidia.preConfiguredDeviceMemory"}, len(effective.HAMiFamilies()) - 11},
		// v2.6: the old single iluvatar section's names and enflame's vgcu
		// keys are not today's HAMi's; its vnpus list is read (chip 910B
		// unknown to HAMiFamilies, built from its keys, without a core
		// resource) but not governed (Ascend off, HAMi's default).
		{"hami-chart-v2.6.yaml", []string{"iluvatar.resourceCountName", "enflame.resourceCountName", "nvidia.knownMigGeometries", "nvidia.gpuCorePolicy"}, 11},
	} {
		t.Run(tt.file, func(t *testing.T) {
			cfg, ignored, err := config.Load(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := config.Settings(cfg); got != effective.Nvidia() {
				t.Errorf("settings = %+v, want HAMi's defaults", got)
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
			if n := len(config.Families(cfg)); n != tt.families {
				t.Errorf("%d families governed, want %d", n, tt.families)
			}
		})
	}
}

// everyField is a configuration that sets every field to a value other
// than its default.
func everyField() *config.Configuration {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	return &config.Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: "config.gpuadmit.io/v1alpha1", Kind: "Configuration"},
		Devices: everySection(&configv1alpha1.Devices{Nvidia: &configv1alpha1.NvidiaDevices{
			ResourceCountName: ptr.To("example.com/vgpu"), ResourceMemoryName: ptr.To("example.com/vmem"),
			ResourceMemoryPercentageName: ptr.To("example.com/vmem-pct"), ResourceCoreName: ptr.To("example.com/vcores"),
			DefaultMemory: ptr.To[int64](4096), DefaultCores: ptr.To[int64](25), DefaultGPUNum: ptr.To[int64](2),
			MemoryFactor: ptr.To[int64](1024), ExclusiveCores: ptr.To(false)}}),
		Admission: &configv1alpha1.Admission{NearLimitPercent: ptr.To[int64](75), Unsatisfiable: ptr.To(configv1alpha1.UnsatisfiableWarn),
			PolicyEvaluationTimeout: d(250 * time.Millisecond), ReviewTimeout: d(3 * time.Second), StaleFeed: ptr.To(configv1alpha1.StaleFeedDeny),
			Reservations: &configv1alpha1.Reservations{ConfirmAfter: d(2 * time.Second), RecheckMax: d(10 * time.Second),
				ReadsPerSecond: ptr.To[int32](5), MaxPerNamespace: ptr.To[int32](50)},
			Watches: &configv1alpha1.Watches{ProbeEvery: d(5 * time.Second), StaleAfter: d(time.Minute)},
			Gangs:   &configv1alpha1.Gangs{HoldTimeout: d(90 * time.Second)}},
		Policy:           &configv1alpha1.Policy{ConfigMapSelector: ptr.To("team=gpu"), Directory: ptr.To("/etc/gpuadmit/policies"), MemoryBudgetMiB: ptr.To[int32](32)},
		ClientConnection: &configv1alpha1.ClientConnection{QPS: ptr.To[float32](50), Burst: ptr.To[int32](100)},
		DRA: &configv1alpha1.DRA{DeviceClasses: []configv1alpha1.DeviceClass{{Name: "gpu.example.com", Family: "hygon",
			Mode: configv1alpha1.DeviceClassDevice, Driver: "example.com", MemoryCapacity: ptr.To("mem"), CoresCapacity: ptr.To("sm"),
			CoresPerDevice: ptr.To[int64](50), Selectors: []string{"device.driver == 'example.com'"}}},
			NetworkPoolDrivers: []string{"example.com"}},
		Audit: &configv1alpha1.Audit{OpenReports: ptr.To(true)},
		Teams: &configv1alpha1.Teams{LeaveGrace: d(3 * time.Minute)},
		Budgets: &configv1alpha1.Budgets{CheckpointInterval: d(30 * time.Second), WarnPercents: []int64{50, 90, 100},
			ClockTolerance: d(10 * time.Second), RollingBuckets: ptr.To[int32](96)},
		Capacity: &configv1alpha1.Capacity{MaxDeviceMemoryMiB: map[string]int64{"default": 524288, "hygon": 131072}},
		Workloads: &configv1alpha1.Workloads{Enforcement: ptr.To(configv1alpha1.WorkloadEnforcementWarn),
			Kinds: []configv1alpha1.WorkloadKind{{Group: "example.com", Version: "v2", Kind: "Trainer", Resource: "trainers", ScaleReplicasPath: "spec.size",
				Templates: []configv1alpha1.WorkloadTemplate{{Path: "spec.roles[*].template", Fallback: "spec.defaults[*].template",
					Replicas: []configv1alpha1.WorkloadReplicas{{Path: "spec.roles[*].replicas", Default: ptr.To[int64](2), Offset: -1,
						AtLeast: "spec.roles[*].min", AtMost: "spec.roles[*].max"}}}},
				PodCreator: &configv1alpha1.PodCreator{Username: "system:serviceaccount:trainer:operator", Groups: []string{"system:authenticated"}}}}},
	}
}

// TestRoundTripEveryField: a configuration with every field set to a
// value other than its default, written as YAML and read back, is the
// same; and every key of the type is set (a field added later fails here
// until the test sets it).
func TestRoundTripEveryField(t *testing.T) {
	in := everyField()
	out, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, ignored, err := config.Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(ignored) != 0 || !equality.Semantic.DeepEqual(got, in) {
		t.Fatalf("read back\n%s\nwrote\n%s\n(ignored %q)", dump(got), out, ignored)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	for _, key := range config.Keys() {
		if key == "devices.hamiConfigPath" || key == "devices.hamiConfigMap" {
			continue // excludes the inline keys: TestHAMiConfigPath, TestReadHAMiConfigMap
		}
		if _, ok := lookup(doc, key); !ok {
			t.Errorf("%s is not set by the round trip's configuration", key)
		}
		if a, b := fieldAt(in, key), fieldAt(def, key); key != "apiVersion" && key != "kind" && reflect.DeepEqual(a, b) {
			t.Errorf("%s is at its default in the round trip's configuration: a defaulting mistake would not show", key)
		}
	}
}

// TestExplicitZeroKept: an explicit 0 is a value, not "unset": it stays,
// where the default is not 0 (nearLimitPercent 0: never warn), and is
// refused with the key's name where 0 is not allowed.
func TestExplicitZeroKept(t *testing.T) {
	cfg, _, err := config.Parse([]byte(head + "admission: {nearLimitPercent: 0, reservations: {confirmAfter: 0s}}\ndevices: {nvidia: {defaultGPUNum: 0}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.Admission.NearLimitPercent != 0 || cfg.Admission.Reservations.ConfirmAfter.Duration != 0 || *cfg.Devices.Nvidia.DefaultGPUNum != 0 {
		t.Fatalf("explicit zeros not kept: %s", dump(cfg))
	}
	if _, _, err := config.Parse([]byte(head + "admission: {reservations: {readsPerSecond: 0}}\n")); err == nil ||
		!strings.Contains(err.Error(), "admission.reservations.readsPerSecond: Invalid value: 0: must be at least 1") {
		t.Fatalf("readsPerSecond 0: %v, want an error naming the key", err)
	}
}

// TestVersionedConfiguration: strict in gpuadmit's sections, every bad
// value an error naming its key.
func TestVersionedConfiguration(t *testing.T) {
	tests := []parseCase{
		{name: "empty: every default", in: head},
		{name: "HAMi keys ignored, and named, in the devices section", in: head + "devices:\n  nvidia: {memoryFactor: 1024, deviceSplitCount: 10}\n  cambricon: {}\n  nvlink: {}\n",
			ignored: []string{"devices.nvidia.deviceSplitCount", "devices.nvlink"},
			want: func(c *config.Configuration) {
				c.Devices.Nvidia.MemoryFactor = ptr.To[int64](1024)
				c.Devices.Cambricon = cambriconDefaults()
			}},
		{name: "unknown admission key", in: head + "admission: {nearLimitPrecent: 80}\n", wantErr: `unknown key "admission.nearLimitPrecent"`},
		{name: "unknown key deep down", in: head + "admission: {reservations: {maxPerNamspace: 80}}\n", wantErr: `unknown key "admission.reservations.maxPerNamspace"`},
		{name: "unknown top-level key", in: head + "admision: {}\n", wantErr: `unknown key "admision"`},
		{name: "unknown client key", in: head + "clientConnection: {qpm: 5}\n", wantErr: `unknown key "clientConnection.qpm"`},
		{name: "duplicate key", in: head + "policy:\n  directory: a\n  directory: b\n", wantErr: `"directory" already set in map`},
		{name: "duplicate key in JSON", in: `{"apiVersion":"config.gpuadmit.io/v1alpha1","kind":"Configuration","policy":{"directory":"a","directory":"b"}}`, wantErr: `duplicate field "policy.directory"`},
		{name: "near-limit out of range", in: head + "admission: {nearLimitPercent: 120}\n", wantErr: "admission.nearLimitPercent: Invalid value: 120: must be within 0..100"},
		{name: "unsatisfiable", in: head + "admission: {unsatisfiable: maybe}\n", wantErr: `admission.unsatisfiable: Unsupported value: "maybe": supported values: "Deny", "Warn"`},
		{name: "stale feed", in: head + "admission: {staleFeed: Ignore}\n", wantErr: `admission.staleFeed: Unsupported value: "Ignore"`},
		{name: "duration", in: head + "admission: {reservations: {confirmAfter: five}}\n", wantErr: `admission.reservations.confirmAfter: Invalid value: "five": want a duration such as 5s or 1m30s`},
		{name: "negative duration", in: head + "admission: {policyEvaluationTimeout: -1s}\n", wantErr: "admission.policyEvaluationTimeout: Invalid value: \"-1s\": must be positive"},
		{name: "gang hold timeout", in: head + "admission: {gangs: {holdTimeout: 0s}}\n", wantErr: "admission.gangs.holdTimeout: Invalid value: \"0s\": must be within 1s..24h"},
		{name: "team leave grace zero", in: head + "teams: {leaveGrace: 0s}\n", wantErr: "teams.leaveGrace: Invalid value: \"0s\": must be within 1s..24h"},
		{name: "team leave grace too long", in: head + "teams: {leaveGrace: 25h}\n", wantErr: "teams.leaveGrace: Invalid value: \"25h0m0s\": must be within 1s..24h"},
		{name: "budget checkpoint interval zero", in: head + "budgets: {checkpointInterval: 0s}\n", wantErr: "budgets.checkpointInterval: Invalid value: \"0s\": must be within 1s..1h"},
		{name: "budget checkpoint interval too long", in: head + "budgets: {checkpointInterval: 61m}\n", wantErr: "budgets.checkpointInterval: Invalid value: \"1h1m0s\": must be within 1s..1h"},
		{name: "budget clock tolerance negative", in: head + "budgets: {clockTolerance: -1s}\n", wantErr: "budgets.clockTolerance: Invalid value: \"-1s\": must be within 0s..1h"},
		{name: "budget clock tolerance too long", in: head + "budgets: {clockTolerance: 2h}\n", wantErr: "budgets.clockTolerance: Invalid value: \"2h0m0s\": must be within 0s..1h"},
		{name: "budget rolling buckets too few", in: head + "budgets: {rollingBuckets: 3}\n", wantErr: "budgets.rollingBuckets: Invalid value: 3: must be within 4..500"},
		{name: "budget rolling buckets too many", in: head + "budgets: {rollingBuckets: 501}\n", wantErr: "budgets.rollingBuckets: Invalid value: 501: must be within 4..500"},
		{name: "budget warn percent out of range", in: head + "budgets: {warnPercents: [0, 101]}\n", wantErr: "budgets.warnPercents[0]: Invalid value: 0: must be within 1..100, budgets.warnPercents[1]: Invalid value: 101: must be within 1..100"},
		{name: "budget warn percents not ascending", in: head + "budgets: {warnPercents: [95, 80, 80]}\n", wantErr: "budgets.warnPercents[1]: Invalid value: 80: must be above the one before (ascending, no repeats)"},
		{name: "budget unknown key", in: head + "budgets: {checkpointIntervall: 1m}\n", wantErr: `unknown key "budgets.checkpointIntervall"`},
		{name: "reservations bound", in: head + "admission: {reservations: {maxPerNamespace: 0}}\n", wantErr: "admission.reservations.maxPerNamespace: Invalid value: 0: must be within 1..5000"},
		{name: "negative confirm", in: head + "admission: {reservations: {confirmAfter: -1s}}\n", wantErr: "admission.reservations.confirmAfter: Invalid value: \"-1s\": must not be negative"},
		{name: "recheck below confirm", in: head + "admission: {reservations: {confirmAfter: 10s, recheckMax: 5s}}\n", wantErr: "admission.reservations.recheckMax: Invalid value: \"5s\": must be at least confirmAfter"},
		{name: "stale before a probe", in: head + "admission: {watches: {probeEvery: 1m, staleAfter: 30s}}\n", wantErr: "admission.watches.staleAfter: Invalid value: \"30s\": must be longer than probeEvery"},
		{name: "selector", in: head + "policy: {configMapSelector: \"a in (\"}\n", wantErr: "policy.configMapSelector: Invalid value"},
		{name: "policy memory budget", in: head + "policy: {memoryBudgetMiB: 0}\n", wantErr: "policy.memoryBudgetMiB: Invalid value: 0: must be at least 1"},
		{name: "client rate", in: head + "clientConnection: {qps: -1, burst: 0}\n", wantErr: "clientConnection.qps: Invalid value: -1: must be positive, clientConnection.burst: Invalid value: 0: must be at least 1"},
		{name: "device key", in: head + "devices: {nvidia: {defaultCores: 101}}\n", wantErr: "devices.nvidia.defaultCores: Invalid value: 101: must be within 0..100"},
		{name: "path and inline keys", in: head + "devices: {hamiConfigPath: x.yaml, nvidia: {}}\n", wantErr: "devices: hamiConfigPath excludes inline keys"},
		{name: "missing HAMi file", in: head + "devices: {hamiConfigPath: nope.yaml}\n", wantErr: "devices.hamiConfigPath: open nope.yaml"},
		{name: "wrong version", in: "apiVersion: config.gpuadmit.io/v2\nkind: Configuration\n", wantErr: `apiVersion "config.gpuadmit.io/v2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestHAMiConfigPath: the devices section may name a HAMi
// device-config.yaml, read when the configuration is loaded.
func TestHAMiConfigPath(t *testing.T) {
	cfg, ignored, err := config.Parse([]byte(head + "devices: {hamiConfigPath: testdata/hami-chart-v2.10.yaml}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if config.Settings(cfg) != effective.Nvidia() || !slices.Contains(ignored, "nvidia.deviceSplitCount") ||
		*cfg.Devices.HAMiConfigPath != "testdata/hami-chart-v2.10.yaml" {
		t.Fatalf("settings %+v, ignored %q", config.Settings(cfg), ignored)
	}
}

// TestDefaultsInOnePlace: Default is the defaulting function applied to
// nothing, every default is valid, and it reads HAMi's device defaults.
func TestDefaultsInOnePlace(t *testing.T) {
	c := &config.Configuration{}
	config.SetDefaults(c)
	if !equality.Semantic.DeepEqual(c, config.Default()) {
		t.Errorf("SetDefaults(zero) = %s, Default() = %s", dump(c), dump(config.Default()))
	}
	if errs := config.Validate(c); len(errs) > 0 {
		t.Errorf("the defaults are invalid: %v", errs)
	}
	if *c.Admission.NearLimitPercent != 90 || c.Admission.Reservations.ConfirmAfter.Duration != 0 || *c.Admission.Reservations.MaxPerNamespace != 500 ||
		*c.Policy.ConfigMapSelector != "gpuadmit.io/policy=true" || *c.Admission.Unsatisfiable != "Deny" || *c.ClientConnection.QPS != 500 ||
		config.Settings(c) != effective.Nvidia() {
		t.Errorf("defaults: %s", dump(c))
	}
}

// TestShippedConfiguration: the configuration the manifests install is
// valid and spells out every key at its default.
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
	if !equality.Semantic.DeepEqual(cfg, config.Default()) || len(ignored) != 0 {
		t.Errorf("shipped configuration %s (ignored %q) differs from the defaults %s", dump(cfg), ignored, dump(config.Default()))
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range config.Keys() {
		if strings.HasPrefix(key, "devices.") && !strings.HasPrefix(key, "devices.nvidia.") {
			continue // a section present governs its families: the defaults govern nvidia only
		}
		// A count's offset and bounds are spelt where they are used (not
		// in its first entry).
		if _, ok := lookup(doc, key); !ok && key != "devices.hamiConfigPath" && key != "devices.hamiConfigMap" && key != "policy.directory" &&
			key != "workloads.kinds[].templates[].replicas[].offset" && key != "workloads.kinds[].templates[].replicas[].atLeast" &&
			key != "workloads.kinds[].templates[].replicas[].atMost" {
			t.Errorf("the shipped configuration does not spell out %s", key)
		}
	}
}

// lookup is the value of key in doc; a "[]" key (iluvatars[]) is its
// list's first entry (of vnpus.configs[], the configs list of vnpus).
func lookup(doc map[string]any, key string) (any, bool) {
	var v any = doc
	for _, k := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		k, isList := strings.CutSuffix(k, "[]")
		if v, ok = m[k]; !ok {
			return nil, false
		}
		if l, _ := v.([]any); isList && len(l) > 0 {
			v = l[0]
		} else if isList {
			return nil, false
		}
	}
	return v, true
}

// fieldAt is the value of key in c, as JSON (nil when unset).
func fieldAt(c *config.Configuration, key string) any {
	b, _ := json.Marshal(c)
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	v, _ := lookup(doc, key)
	return v
}

// TestDeviceMemoryBound: capacity.maxDeviceMemoryMiB bounds each family
// by name, every other family by "default" (1 TiB when unset), and refuses
// a family it does not govern (a misspelt name would silently keep the
// default) and a bound below 1.
func TestDeviceMemoryBound(t *testing.T) {
	bound := config.MaxDeviceMemoryMiB(config.Default())
	if bound("nvidia") != 1<<20 || bound("hygon") != 1<<20 {
		t.Errorf("default bounds: nvidia %d, hygon %d; want 1048576", bound("nvidia"), bound("hygon"))
	}
	cfg, _, err := config.Parse([]byte(head + "devices: {hygon: {}}\ncapacity: {maxDeviceMemoryMiB: {nvidia: 400000, hygon: 131072}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	bound = config.MaxDeviceMemoryMiB(cfg)
	if bound("nvidia") != 400000 || bound("hygon") != 131072 || bound("cambricon") != 1<<20 {
		t.Errorf("bounds: nvidia %d, hygon %d, cambricon %d", bound("nvidia"), bound("hygon"), bound("cambricon"))
	}
	for _, tt := range []struct{ yaml, want string }{
		{"capacity: {maxDeviceMemoryMiB: {nvidai: 400000}}\n", `capacity.maxDeviceMemoryMiB[nvidai]: Unsupported value: "nvidai"`},
		{"capacity: {maxDeviceMemoryMiB: {hygon: 400000}}\n", `capacity.maxDeviceMemoryMiB[hygon]: Unsupported value`},
		{"capacity: {maxDeviceMemoryMiB: {default: 0}}\n", `capacity.maxDeviceMemoryMiB[default]: Invalid value: 0: must be at least 1`},
		{"capacity: {maxDeviceMemoryMiB: {nvidia: -1}}\n", `capacity.maxDeviceMemoryMiB[nvidia]: Invalid value: -1`},
	} {
		if _, _, err := config.Parse([]byte(head + tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", strings.TrimSpace(tt.yaml), err, tt.want)
		}
	}
}
