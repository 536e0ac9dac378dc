package effective_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestHostileValues attacks every family's every resource, beside a count
// of 1, with values HAMi drops or misreads (negative, fractional, huge,
// byte-suffixed): each is refused with an *InvalidError or charged at
// least one device; none is read as nothing, which would admit the pod
// past every limit.
func TestHostileValues(t *testing.T) {
	hostile := []string{"-1", "1.5", "500m", "9223372036854775807", "99E", "1Ki", "8Gi", "8G", "1e18"}
	for _, f := range append(effective.HAMiFamilies(), effective.Gpushare()) {
		n := f.Names
		for _, name := range []corev1.ResourceName{n.Count, n.Memory, n.MemoryPercentage, n.Cores} {
			if name == "" {
				continue
			}
			for _, v := range hostile {
				opts := []testpod.Opt{testpod.Res(name, v)}
				if name != n.Count && n.Count != "" {
					opts = append(opts, testpod.Res(n.Count, "1"))
				}
				d, err := effective.Compute(testpod.New("p").App("c", opts...).Build(), f, effective.Options{DeviceMemoryMiB: 32768})
				var inv *effective.InvalidError
				switch {
				case err != nil && !errors.As(err, &inv):
					t.Errorf("%s %s=%s: %v, want an *InvalidError", f.Name, name, v, err)
				case err == nil && d.Effective.GPU < 1:
					t.Errorf("%s %s=%s: charged %v, no device: want a refusal or a charge", f.Name, name, v, d.Effective)
				}
			}
		}
	}
}
