package config_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// TestDRASection: the dra section is decoded strictly, defaulted per class
// and validated with the key path of what is wrong.
func TestDRASection(t *testing.T) {
	head := "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\n"
	for _, tc := range []struct {
		name, doc string
		classes   int
		want      []string // substrings of the error; none: valid
	}{
		{"omitted: the shipped classes", "", 3, nil},
		{"empty: none", "dra: {deviceClasses: []}\n", 0, nil},
		{"one, defaulted", "dra: {deviceClasses: [{name: gpu.example.com, mode: Device}]}\n", 1, nil},
		{"unknown mode", "dra: {deviceClasses: [{name: a.example.com, mode: Shared}]}\n", 0,
			[]string{"dra.deviceClasses[0].mode", `"Shared"`}},
		{"ungoverned family", "dra: {deviceClasses: [{name: a.example.com, mode: Device, family: hygon}]}\n", 0,
			[]string{"dra.deviceClasses[0].family", `"hygon"`}},
		{"twice", "dra: {deviceClasses: [{name: a.example.com, mode: Device}, {name: a.example.com, mode: Capacity}]}\n", 0,
			[]string{"dra.deviceClasses[1].name", "Duplicate"}},
		{"not a DNS name", "dra: {deviceClasses: [{name: A_B, mode: Device}]}\n", 0, []string{"dra.deviceClasses[0].name"}},
		{"negative cores", "dra: {deviceClasses: [{name: a.example.com, mode: Device, coresPerDevice: -1}]}\n", 0,
			[]string{"dra.deviceClasses[0].coresPerDevice"}},
		{"unknown key", "dra: {deviceClasses: [{name: a.example.com, mode: Device, memory: x}]}\n", 0, []string{"memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := config.Parse([]byte(head + tc.doc))
			if len(tc.want) > 0 {
				if err == nil {
					t.Fatal("accepted")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cls := config.DeviceClasses(cfg)
			if len(cls) != tc.classes {
				t.Fatalf("%d classes, want %d", len(cls), tc.classes)
			}
			for _, c := range cls {
				if c.Family != "nvidia" || c.MemoryCapacity != "memory" || c.CoresCapacity != "cores" {
					t.Errorf("class %s not defaulted: %+v", c.Name, c)
				}
			}
		})
	}
}

// TestNetworkPoolDrivers: dra.networkPoolDrivers defaults to every driver,
// an empty list trusts none, and a bad entry is refused with its path.
func TestNetworkPoolDrivers(t *testing.T) {
	head := "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\n"
	for _, tc := range []struct {
		name, doc string
		options   int    // charger options: the devices' bound (always), and a list of drivers unless every driver
		want      string // substring of the error; "": valid
	}{
		{"omitted: every driver", "", 1, ""},
		{"every driver", "dra: {deviceClasses: [], networkPoolDrivers: ['*']}\n", 1, ""},
		{"none", "dra: {deviceClasses: [], networkPoolDrivers: []}\n", 2, ""},
		{"one", "dra: {deviceClasses: [], networkPoolDrivers: [gpu.nvidia.com]}\n", 2, ""},
		{"* among others", "dra: {deviceClasses: [], networkPoolDrivers: ['*', gpu.nvidia.com]}\n", 0, "dra.networkPoolDrivers[0]"},
		{"twice", "dra: {deviceClasses: [], networkPoolDrivers: [a.example.com, a.example.com]}\n", 0, "dra.networkPoolDrivers[1]"},
		{"not a DNS name", "dra: {deviceClasses: [], networkPoolDrivers: [A_B]}\n", 0, "dra.networkPoolDrivers[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := config.Parse([]byte(head + tc.doc))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one naming %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(config.ChargerOptions(cfg)); n != tc.options {
				t.Errorf("%d charger options, want %d", n, tc.options)
			}
		})
	}
}
