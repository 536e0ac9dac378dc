package effective_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// FuzzFamilies: for any family and any quantities of its resources (in the
// limits or the requests, with or without Ascend's soft-split annotation),
// Compute never panics, and it either errors with an *InvalidError or
// books non-negative amounts.
func FuzzFamilies(f *testing.F) {
	fams := append(effective.HAMiFamilies(), effective.Gpushare())
	for i := range fams {
		f.Add(uint8(i), "1", "2000", "50", "0", false, false, int64(0))
		f.Add(uint8(i), "2", "", "", "", true, false, int64(24576))
		f.Add(uint8(i), "3", "512Ki", "100", "", false, true, int64(1))
		f.Add(uint8(i), "0", "0", "0", "0", true, true, int64(0))
	}
	f.Add(uint8(0), "9223372036854775807", "8E", "100", "100", false, false, int64(1)<<62)
	f.Fuzz(func(t *testing.T, fi uint8, count, mem, cores, pct string, requests, soft bool, dev int64) {
		fam := fams[int(fi)%len(fams)]
		c := corev1.Container{Name: "c"}
		list := corev1.ResourceList{}
		for _, v := range []struct {
			name  corev1.ResourceName
			value string
		}{{fam.Names.Count, count}, {fam.Names.Memory, mem}, {fam.Names.Cores, cores}, {fam.Names.MemoryPercentage, pct}} {
			if q, err := resource.ParseQuantity(v.value); v.name != "" && err == nil {
				list[v.name] = q
			}
		}
		if requests {
			c.Resources.Requests = list
		} else {
			c.Resources.Limits = list
		}
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
		if soft {
			p.Annotations = map[string]string{"huawei.com/vnpu-mode": "hami-core"}
		}
		d, err := effective.Compute(p, fam, effective.Options{DeviceMemoryMiB: max(dev, 0)})
		var inv *effective.InvalidError
		switch {
		case err != nil && !errors.As(err, &inv):
			t.Fatalf("%s: error %T %v is not an *InvalidError", fam.Name, err, err)
		case err == nil && (d.Effective.GPU < 0 || d.Effective.MemMiB < 0 || d.Effective.Cores < 0):
			t.Fatalf("%s: negative demand %v", fam.Name, d.Effective)
		}
	})
}
