package config_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// The families of the devices section: every HAMi backend section, and
// gpuadmit's gpushare.

func cambriconDefaults() *configv1alpha1.NamedDevices {
	return &configv1alpha1.NamedDevices{ResourceCountName: ptr.To("cambricon.com/vmlu"),
		ResourceMemoryName: ptr.To("cambricon.com/mlu.smlu.vmemory"), ResourceCoreName: ptr.To("cambricon.com/mlu.smlu.vcore")}
}

// everySection adds every section to d, every key set to a value other
// than its default (and every resource name distinct).
func everySection(d *configv1alpha1.Devices) *configv1alpha1.Devices {
	n := func(s string) *string { return ptr.To("example.com/" + s) }
	i := ptr.To[int64]
	d.Cambricon = &configv1alpha1.NamedDevices{ResourceCountName: n("mlu"), ResourceMemoryName: n("mlu-mem"), ResourceCoreName: n("mlu-core")}
	d.Hygon = &configv1alpha1.HygonDevices{ResourceCountName: n("dcu"), ResourceMemoryName: n("dcu-mem"), ResourceCoreName: n("dcu-core"), MemoryFactor: i(2)}
	d.Metax = &configv1alpha1.MetaxDevices{ResourceCountName: n("mx"), ResourceVCountName: n("mx-s"), ResourceVMemoryName: n("mx-mem"), ResourceVCoreName: n("mx-core")}
	d.Enflame = &configv1alpha1.EnflameDevices{ResourceNameGCU: n("gcu"), ResourceNameDRSGCU: n("drs"), ResourceNameGCUMemory: n("drs-mem"), ResourceNameGCUCore: n("drs-core")}
	d.Mthreads = &configv1alpha1.NamedDevices{ResourceCountName: n("mt"), ResourceMemoryName: n("mt-mem"), ResourceCoreName: n("mt-core")}
	d.Iluvatars = []configv1alpha1.IluvatarDevices{{ChipName: ptr.To("MR-V100"), CommonWord: ptr.To("MRV100X"),
		ResourceCountName: n("ilu"), ResourceMemoryName: n("ilu-mem"), ResourceCoreName: n("ilu-core")}}
	d.Kunlun = &configv1alpha1.KunlunDevices{ResourceCountName: n("xpu"), ResourceVCountName: n("vxpu"), ResourceVMemoryName: n("vxpu-mem")}
	d.AWSNeuron = &configv1alpha1.AWSNeuronDevices{ResourceCountName: n("neuron"), ResourceCoreName: n("neuron-core")}
	d.AMD = &configv1alpha1.NamedDevices{ResourceCountName: n("amd"), ResourceMemoryName: n("amd-mem"), ResourceCoreName: n("amd-core")}
	d.Vastai = &configv1alpha1.CountDevices{ResourceCountName: n("va")}
	d.Biren = &configv1alpha1.CountDevices{ResourceCountName: n("br")}
	d.VNPUs = &configv1alpha1.VNPUDevices{Configs: []configv1alpha1.VNPUConfig{{ChipName: ptr.To("910B2"), CommonWord: ptr.To("Ascend910X"),
		ResourceName: n("npu"), ResourceMemoryName: n("npu-mem"), ResourceCoreName: n("npu-core"),
		MemoryAllocatable: i(60000), MemoryCapacity: i(61440), MemoryFactor: i(2), AICore: i(20), AICPU: i(5), SuperPod: ptr.To(true),
		Templates: []configv1alpha1.VNPUTemplate{{Name: ptr.To("t1"), Memory: i(4096), AICore: i(2), AICPU: i(1)}}}}}
	d.Gpushare = &configv1alpha1.GpushareDevices{MemoryUnit: ptr.To(configv1alpha1.MemoryUnitMiB)}
	d.Ascend, d.Iluvatar = &configv1alpha1.BackendSwitch{Enabled: ptr.To(true)}, &configv1alpha1.BackendSwitch{Enabled: ptr.To(true)}
	return d
}

// TestHAMiRenderedConfig: the device config HAMi's chart renders with its
// default values (testdata/hami-chart-rendered.yaml, rendered by helm from
// HAMi's chart: see its header) loads as is, bare and through
// devices.hamiConfigPath, and governs exactly effective.HAMiFamilies; no
// key gpuadmit reads is reported as ignored.
func TestHAMiRenderedConfig(t *testing.T) {
	const file = "testdata/hami-chart-rendered.yaml"
	bare, bareIgnored, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	off, offIgnored, err := config.Parse([]byte(head + "devices: {hamiConfigPath: " + file + "}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(offIgnored, bareIgnored) || !slices.Equal(config.Families(bare), config.Families(off)) {
		t.Errorf("through hamiConfigPath: ignored %q, bare %q", offIgnored, bareIgnored)
	}
	// HAMi's scheduler starts Ascend and Iluvatar only when its chart
	// enables them (devices.ascend.enabled, devices.iluvatar.enabled).
	if n := len(config.Families(off)); n != len(effective.HAMiFamilies())-11 {
		t.Errorf("switches off: %d families governed, want every HAMi family but the 7 Ascend and 4 Iluvatar chips", n)
	}
	cfg, ignored, err := config.Parse([]byte(head + "devices: {hamiConfigPath: " + file + ", ascend: {enabled: true}, iluvatar: {enabled: true}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ignored, bareIgnored) {
		t.Errorf("switches on: ignored %q, bare %q", ignored, bareIgnored)
	}
	got, want := config.Families(cfg), effective.HAMiFamilies()
	if len(got) != len(want) {
		t.Fatalf("%d families governed, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("family %d:\n%+v\nwant HAMi's default\n%+v", i, got[i], want[i])
		}
	}
	if err := effective.ValidateFamilies(got); err != nil {
		t.Error(err)
	}
	read := map[string]bool{}
	for _, k := range config.Keys() {
		read[k] = true
	}
	chip := regexp.MustCompile(`^(vnpus|iluvatars)\[[^\]]+\]`)
	for _, k := range ignored {
		key := chip.ReplaceAllString(k, "$1[]")
		key = strings.Replace(key, "vnpus[]", "vnpus.configs[]", 1)
		if read["devices."+key] {
			t.Errorf("%s is read, but reported as ignored", k)
		}
	}
	for _, w := range []string{"nvidia.deviceSplitCount", "nvidia.migProfileAllowlist", "metax.sgpuTopologyAware",
		"vnpus.hamiVnpuCore", "vnpus[Ascend910].runtimeClassName"} {
		if !slices.Contains(ignored, w) {
			t.Errorf("ignored %q does not name %q", ignored, w)
		}
	}
}

// TestFamiliesGoverned: nvidia alone by default; a section present (even
// empty) governs its families at HAMi's defaults, in HAMiFamilies' order,
// gpushare last.
func TestFamiliesGoverned(t *testing.T) {
	if fams := config.Families(config.Default()); len(fams) != 1 || fams[0] != effective.Nvidia() {
		t.Errorf("the defaults govern %v, want nvidia alone", names(fams))
	}
	cfg, _, err := config.Parse([]byte("gpushare: {}\nvnpus: {configs: [{chipName: Ascend910}, {chipName: 910A}]}\nbiren: {}\nmetax:\nkunlun: {}\nascend: {enabled: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	fams := config.Families(cfg)
	if got, want := names(fams), "nvidia metax metax-sgpu kunlun kunlun-vxpu biren ascend-910A ascend-910C gpushare"; got != want {
		t.Errorf("families %s, want %s", got, want)
	}
	h := map[string]effective.Family{}
	for _, f := range append(effective.HAMiFamilies(), effective.Gpushare()) {
		h[f.Name] = f
	}
	for _, f := range fams {
		if f != h[f.Name] {
			t.Errorf("%s: %+v, want the default %+v", f.Name, f, h[f.Name])
		}
	}
}

func names(fams []effective.Family) string {
	var out []string
	for _, f := range fams {
		out = append(out, f.Name)
	}
	return strings.Join(out, " ")
}

// TestGpushare: gpuadmit's own section, strict; its memory unit is the
// family's memory factor.
func TestGpushare(t *testing.T) {
	for _, tt := range []struct {
		in      string
		factor  int64
		wantErr string
	}{
		{in: "gpushare: {}", factor: 1024},
		{in: "gpushare: {memoryUnit: GiB}", factor: 1024},
		{in: "gpushare: {memoryUnit: MiB}", factor: 1},
		{in: "gpushare: {memoryUnit: KiB}", wantErr: `devices.gpushare.memoryUnit: Unsupported value: "KiB": supported values: "GiB", "MiB"`},
		{in: "gpushare: {memoryUnit: 1024}", wantErr: "devices.gpushare.memoryUnit: want GiB or MiB, got 1024"},
		{in: "gpushare: {memoryUnits: MiB}", wantErr: "devices.gpushare.memoryUnits: unknown key"},
		{in: "gpushare: {memoryUnit: MiB}\n  hamiConfigPath: testdata/hami-chart-rendered.yaml", factor: 1},
	} {
		cfg, _, err := config.Parse([]byte(head + "devices:\n  " + tt.in + "\n"))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		fams := config.Families(cfg)
		g := fams[len(fams)-1]
		want := effective.Gpushare()
		want.MemoryFactor = tt.factor
		if g != want {
			t.Errorf("%s: last family %+v, want %+v", tt.in, g, want)
		}
	}
}

// TestFamilySections: the typed keys of every section are strict (an error
// names the key path), names are distinct across sections, and a chip
// HAMiFamilies does not know is built from its own keys or refused.
func TestFamilySections(t *testing.T) {
	tests := []parseCase{
		{name: "name written as a number", in: head + "devices: {cambricon: {resourceCoreName: 5}}\n",
			wantErr: "devices.cambricon.resourceCoreName: want a resource name, got 5"},
		{name: "factor written as a string", in: "hygon: {memoryFactor: \"2\"}\n", wantErr: `hygon.memoryFactor: want an integer, got "2"`},
		{name: "chip key of the wrong type", in: "vnpus: {configs: [{chipName: 910B2, memoryCapacity: big}]}\n",
			wantErr: `vnpus[910B2].memoryCapacity: want an integer, got "big"`},
		{name: "template memory of the wrong type", in: head + "devices: {vnpus: {configs: [{chipName: 910B2, templates: [{memory: 1}, {memory: 1.5}]}]}}\n",
			wantErr: "devices.vnpus[910B2].templates[1].memory: want an integer, got 1.5"},
		{name: "iluvatar name of the wrong type", in: "iluvatars: [{chipName: MR-V50, resourceCountName: [a]}]\n",
			wantErr: `iluvatars[MR-V50].resourceCountName: want a resource name, got ["a"]`},
		{name: "a list that is not one", in: "iluvatars: {chipName: MR-V50}\n", wantErr: "iluvatars: want a list"},
		{name: "super pod not a bool", in: "vnpus: [{chipName: Ascend910, superPod: yes please}]\n", wantErr: "vnpus[Ascend910].superPod: want true or false"},
		{name: "a name in two sections", in: "amd: {resourceCountName: nvidia.com/gpu}\n",
			wantErr: `devices.amd.resourceCountName: Duplicate value: "nvidia.com/gpu (already devices.nvidia.resourceCountName)"`},
		{name: "a name in two HAMi sections", in: "cambricon: {}\nhygon: {resourceMemoryName: cambricon.com/mlu.smlu.vcore}\n",
			wantErr: `devices.hygon.resourceMemoryName: Duplicate value: "cambricon.com/mlu.smlu.vcore (already devices.cambricon.resourceCoreName)"`},
		{name: "a name twice in one section", in: "metax: {resourceVCoreName: metax-tech.com/gpu}\n",
			wantErr: `devices.metax.resourceVCoreName: Duplicate value: "metax-tech.com/gpu (already devices.metax.resourceCountName)"`},
		{name: "an empty name", in: "kunlun: {resourceVMemoryName: \"\"}\n", wantErr: "devices.kunlun.resourceVMemoryName: Required value"},
		{name: "a family's own check", in: "vnpus: {configs: [{chipName: 910B3, memoryCapacity: 1024}]}\n",
			wantErr: "devices.vnpus[910B3].memoryCapacity: Invalid value: must be >= the whole device's 65536 MiB, got 1024"},
		{name: "templates out of order", in: "vnpus: {configs: [{chipName: 910B3, templates: [{memory: 2048}, {memory: 1024}]}]}\n",
			wantErr: "devices.vnpus[910B3].templates[1]: Invalid value: memory must be positive and above the previous template's 2048 MiB"},
		{name: "too many templates", in: "vnpus: [{chipName: 910B3, templates: [{memory: 1}, {memory: 2}, {memory: 3}, {memory: 4}, {memory: 5}, {memory: 6}, {memory: 7}, {memory: 8}, {memory: 9}]}]\n",
			wantErr: "devices.vnpus[910B3].templates: Too many: 9: must have at most 8 items"},
		{name: "unknown Ascend chip without its keys", in: "vnpus: {configs: [{chipName: 910X, resourceName: huawei.com/Ascend910X}]}\n",
			wantErr: "devices.vnpus[910X].commonWord: Required value: needed for a chip effective.HAMiFamilies does not know, devices.vnpus[910X].memoryAllocatable: Required value"},
		{name: "unknown Iluvatar chip without its names", in: "iluvatars: [{chipName: MR-V200, commonWord: MR-V200}]\n",
			wantErr: "devices.iluvatars[MR-V200].resourceCoreName: Required value: needed for a chip"},
		{name: "a chip listed twice", in: "iluvatars: [{chipName: MR-V50}, {chipName: MR-V50}]\n", wantErr: `devices.iluvatars[MR-V50].chipName: Duplicate value: "MR-V50"`},
		{name: "two chips, one family name", in: "vnpus: [{chipName: Ascend910}, {chipName: 910C, commonWord: Ascend910Y, resourceName: example.com/y, " +
			"resourceMemoryName: example.com/y-mem, memoryAllocatable: 1024, memoryCapacity: 1024}]\n",
			wantErr: `devices: Invalid value: families 1 and 2 are both named "ascend-910C"`},
		{name: "an entry without a chip name", in: "vnpus: [{resourceName: huawei.com/x}]\n", wantErr: "devices.vnpus[0].chipName: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestUnknownChips: a chip HAMiFamilies does not know, with every key its
// rule needs, is governed from its own keys; the older list form of vnpus
// is read.
func TestUnknownChips(t *testing.T) {
	cfg, ignored, err := config.Load(filepath.Join("testdata", "unknown-chips.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fams := config.Families(cfg)
	if got := names(fams); got != "nvidia iluvatar-MR-V50 iluvatar-MR-V200 ascend-910B2 ascend-910X" {
		t.Fatalf("families %s", got)
	}
	ilu := hamiFamily("iluvatar-MR-V50")
	ilu.Name, ilu.Section, ilu.DeviceType = "iluvatar-MR-V200", "iluvatars[MR-V200]", "MRV200"
	ilu.Names = effective.ResourceNames{Count: "iluvatar.ai/MR-V200-vgpu", Memory: "iluvatar.ai/MR-V200.vMem", Cores: "iluvatar.ai/MR-V200.vCore"}
	ilu.RegisterAnno, ilu.AllocAnno = "hami.io/node-MRV200-register", "hami.io/MRV200-devices-allocated"
	asc := hamiFamily("ascend-910A")
	asc.Name, asc.Section, asc.DeviceType = "ascend-910X", "vnpus[910X]", "Ascend910X"
	asc.Names, asc.NoCores = effective.ResourceNames{Count: "huawei.com/Ascend910X", Memory: "huawei.com/Ascend910X-memory"}, true
	asc.Whole.MemMiB, asc.MemoryCapacity = 40960, 40960
	asc.Templates = [effective.MaxTemplates]effective.Template{{Name: "vir05", MemMiB: 10240}, {Name: "vir10", MemMiB: 20480}}
	asc.RegisterAnno, asc.AllocAnno = "hami.io/node-register-Ascend910X", "hami.io/Ascend910X-devices-allocated"
	for i, want := range []effective.Family{hamiFamily("nvidia"), hamiFamily("iluvatar-MR-V50"), ilu, hamiFamily("ascend-910B2"), asc} {
		if fams[i] != want {
			t.Errorf("family %d:\n%+v\nwant\n%+v", i, fams[i], want)
		}
	}
	if !slices.Contains(ignored, "vnpus[910X].templates[0].vendorNote") {
		t.Errorf("ignored %q", ignored)
	}
}

// hamiFamily is the HAMiFamilies family named name.
func hamiFamily(name string) effective.Family {
	for _, f := range effective.HAMiFamilies() {
		if f.Name == name {
			return f
		}
	}
	panic(name)
}
