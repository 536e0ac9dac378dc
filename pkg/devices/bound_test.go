package devices

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestBoundDevices: a device above its family's bound is left out and
// named, whatever else the announcement holds; the others stay, in order.
// A bound of 0 is the default (1 TiB), never "no bound".
func TestBoundDevices(t *testing.T) {
	dev := func(id string, mem int64) Device { return Device{UUID: id, MemoryMiB: mem, Cores: 100, Healthy: true} }
	for _, tt := range []struct {
		name  string
		devs  []Device
		bound int64
		kept  []string
		named []string
	}{
		{"all plausible", []Device{dev("a", 81920), dev("b", 143771)}, 0, []string{"a", "b"}, nil},
		{"exactly the bound", []Device{dev("a", DefaultMaxDeviceMemoryMiB)}, 0, []string{"a"}, nil},
		{"2^50 MiB among plausible ones", []Device{dev("a", 81920), dev("huge", 1<<50), dev("b", 24576)}, 0, []string{"a", "b"}, []string{`"huge" (1125899906842624 MiB)`}},
		{"the largest int64", []Device{dev("max", math.MaxInt64)}, 0, []string{}, []string{`"max"`}},
		{"a configured bound", []Device{dev("a", 81920), dev("h200", 143771)}, 100000, []string{"a"}, []string{`"h200" (143771 MiB)`}},
		{"a negative bound is the default", []Device{dev("a", 1<<21)}, -1, []string{}, []string{`"a"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kept, err := BoundDevices(NodeDevicesAnnotation, tt.devs, tt.bound)
			var ids []string
			for _, d := range kept {
				ids = append(ids, d.UUID)
			}
			if !slices.Equal(ids, tt.kept) && (len(ids) != 0 || len(tt.kept) != 0) {
				t.Errorf("kept %v, want %v", ids, tt.kept)
			}
			var ie *ImplausibleError
			if (err != nil) != (tt.named != nil) || (err != nil && !errors.As(err, &ie)) {
				t.Fatalf("error %v, want one naming %v", err, tt.named)
			}
			for _, n := range tt.named {
				if !strings.Contains(err.Error(), n) || !strings.Contains(err.Error(), NodeDevicesAnnotation) {
					t.Errorf("error %q does not name %s and the annotation", err, n)
				}
			}
			hami := make([]HAMiDevice, 0, len(tt.devs))
			for _, d := range tt.devs {
				hami = append(hami, HAMiDevice{ID: d.UUID, MemoryMiB: d.MemoryMiB, Count: 1})
			}
			hkept, herr := BoundHAMiDevices("hami.io/node-dcu-register", hami, tt.bound)
			if len(hkept) != len(kept) || (herr == nil) != (err == nil) {
				t.Errorf("HAMi devices: kept %d, error %v; want as the node agent's: %d, %v", len(hkept), herr, len(kept), err)
			}
		})
	}
}
