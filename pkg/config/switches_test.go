package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestBackendSwitches: HAMi's scheduler starts its Ascend and Iluvatar
// backends only with --enable-ascend and --enable-iluvatar (its chart's
// devices.ascend.enabled and devices.iluvatar.enabled, false by default:
// pkg/device/ascend and pkg/device/iluvatar InitDevices return nothing
// otherwise), so HAMi charges nothing for their resources. gpuadmit governs
// their families only when its configuration switches them on explicitly;
// a pod of such a family is otherwise not charged (and the quotas on it are
// not gpuadmit's).
func TestBackendSwitches(t *testing.T) {
	const chips = "iluvatars: [{chipName: MR-V100}]\nvnpus: {configs: [{chipName: 910B2}]}\n"
	iluPod := testpod.New("p").App("c", testpod.Res("iluvatar.ai/MR-V100-vgpu", "1"), testpod.Res("iluvatar.ai/MR-V100.vMem", "64")).Build()
	for _, tt := range []struct {
		name, doc string
		want      string // the governed families
		charged   bool   // the Iluvatar pod is charged
	}{
		{"HAMi's default: both off", chips, "nvidia", false},
		{"iluvatar: {enabled: false}", chips + "iluvatar: {enabled: false}\n", "nvidia", false},
		{"iluvatar: {enabled: true}", chips + "iluvatar: {enabled: true}\n", "nvidia iluvatar-MR-V100", true},
		{"ascend: {enabled: true}", chips + "ascend: {enabled: true}\n", "nvidia ascend-910B2", false},
		{"both, in a versioned configuration beside hamiConfigPath's keys", head + "devices:\n  iluvatars: [{chipName: MR-V100}]\n  vnpus: {configs: [{chipName: 910B2}]}\n  ascend: {enabled: true}\n  iluvatar: {enabled: true}\n",
			"nvidia iluvatar-MR-V100 ascend-910B2", true},
		{"HAMi's chart values pasted: its other keys ignored", chips + "iluvatar: {enabled: true, customresources: [iluvatar.ai/MR-V100-vgpu]}\n", "nvidia iluvatar-MR-V100", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := config.Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			fams := config.Families(cfg)
			if got := names(fams); got != tt.want {
				t.Errorf("families %s, want %s", got, tt.want)
			}
			off := config.SwitchedOff(cfg)
			if slices.Contains(off, "iluvatar-MR-V100") == tt.charged {
				t.Errorf("switched off %q with the Iluvatar pod charged %v", off, tt.charged)
			}
			ds, err := effective.ComputeAll(iluPod, fams, nil)
			if err != nil {
				t.Fatal(err)
			}
			if charged := !ds.Effective().IsZero(); charged != tt.charged {
				t.Errorf("the Iluvatar pod charged %v (%v), want %v", charged, ds.Effective(), tt.charged)
			}
		})
	}
}

// TestBackendSwitchErrors: the switch is read strictly; a section switched
// off is still checked (turning it on later must not be the first time its
// errors show); the switches default to off in the one place defaults are
// set.
func TestBackendSwitchErrors(t *testing.T) {
	for _, tt := range []struct{ doc, err string }{
		{"iluvatar: {enabled: \"yes\"}\n", `iluvatar.enabled: want true or false, got "yes"`},
		{"ascend: {enabled: 1}\n", "ascend.enabled: want true or false, got 1"},
		{"vnpus: {configs: [{chipName: 910B3, memoryCapacity: 1024}]}\n", "devices.vnpus[910B3].memoryCapacity: Invalid value: must be >= the whole device's 65536 MiB"},
	} {
		if _, _, err := config.Parse([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: error %v, want %q", tt.doc, err, tt.err)
		}
	}
	d := config.Default().Devices
	if d.Ascend == nil || d.Ascend.Enabled == nil || *d.Ascend.Enabled || d.Iluvatar == nil || d.Iluvatar.Enabled == nil || *d.Iluvatar.Enabled {
		t.Errorf("defaults: ascend %+v iluvatar %+v, want both enabled: false", d.Ascend, d.Iluvatar)
	}
	cfg, _, err := config.Parse([]byte("iluvatars: [{chipName: MR-V100}]\nvnpus: {configs: [{chipName: 910B2}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := config.SwitchedOffWarning(cfg), "(devices.ascend.enabled, devices.iluvatar.enabled are false; a quota on them is not enforced): iluvatar-MR-V100, ascend-910B2"; !strings.HasSuffix(got, want) {
		t.Errorf("warning %q, want it to end %q", got, want)
	}
	if w := config.SwitchedOffWarning(config.Default()); w != "" {
		t.Errorf("the defaults warn %q", w)
	}
	_, ignored, err := config.Parse([]byte("ascend: {enabled: true, image: x}\n"))
	if err != nil || !slices.Contains(ignored, "ascend.image") {
		t.Errorf("HAMi's chart keys beside enabled: ignored %q, err %v; want ascend.image reported", ignored, err)
	}
}
