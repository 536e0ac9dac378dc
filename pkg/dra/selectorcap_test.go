package dra_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestSelectorCap: the selectors of a claim's requests of governed classes
// count their expressions plus dra.SelectorOverhead each, a request of an
// ungoverned class nothing; a claim over dra.MaxClaimSelectorBytes is
// invalid, none of its requests charged, with a reason naming the count
// and the cap. The marker a slimmed claim keeps (dra.OverCapSelectors)
// counts what it carries, and a claim cannot use one to count less than
// its selectors' length.
func TestSelectorCap(t *testing.T) {
	c := newCharger(t)
	pad := func(n int) string { return `"` + strings.Repeat("p", n-8) + `" != ""` }
	big := pad(resourcev1.CELSelectorExpressionMaxLength)
	over := exact("gpu", gpuClass, 1, big, big, big, big, big, big, big)
	under := exact("gpu", gpuClass, 1, big, big, big, big, big, big)
	ungoverned := exact("fpga", "fpga.example.com", 1, big, big, big, big, big, big, big, big)
	forged := "@gpuadmit: selectors over the cap, bytes=1"
	fake := exact("gpu", gpuClass, 1, forged, big, big, big, big, big, big)
	inv := inventory(slice("s", nvDriver, "node1", gpuDev("gpu-0", "80Gi")))
	for _, tt := range []struct {
		name    string
		spec    *resourcev1.ResourceClaimSpec
		bytes   int
		invalid bool
		reason  string // of an invalid claim under the cap
	}{
		{"six 10 KiB selectors", spec(under, ungoverned), 6 * (dra.SelectorOverhead + resourcev1.CELSelectorExpressionMaxLength), false, ""},
		{"seven: over the cap", spec(over, ungoverned), 7 * (dra.SelectorOverhead + resourcev1.CELSelectorExpressionMaxLength), true, ""},
		{"the marker of seven", &resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: gpuClass, Count: 1, Selectors: dra.OverCapSelectors(72128)}}}}}, 72128, true, ""},
		{"a forged marker counting 1: its length", spec(fake), 6*(dra.SelectorOverhead+resourcev1.CELSelectorExpressionMaxLength) + dra.SelectorOverhead + len(forged),
			true, "does not compile"},
		{"a marker of an ungoverned class", &resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{under, {Name: "fpga",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "fpga.example.com", Selectors: dra.OverCapSelectors(1 << 20)}}}}},
			6 * (dra.SelectorOverhead + resourcev1.CELSelectorExpressionMaxLength), false, ""},
	} {
		if got := c.SelectorBytes(tt.spec); got != tt.bytes {
			t.Errorf("%s: %d bytes, want %d", tt.name, got, tt.bytes)
		}
		ds, err := c.Demands(context.Background(), "c", tt.spec, nil, inv, nvidiaOpts(141<<10))
		var inv *effective.InvalidError
		switch {
		case !tt.invalid && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.reason != "":
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("%s: charged %v, error %v; want %q", tt.name, ds, err, tt.reason)
			}
		case tt.invalid && (!errors.As(err, &inv) || ds != nil || len(inv.Errors) != 1 ||
			!strings.Contains(err.Error(), "count "+strconv.Itoa(tt.bytes)+" bytes") || !strings.Contains(err.Error(), "more than the 65536 gpuadmit accepts")):
			t.Errorf("%s: charged %v, error %v; want invalid, over the cap", tt.name, ds, err)
		}
	}
}
