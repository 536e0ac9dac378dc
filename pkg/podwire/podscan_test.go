package podwire

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestDecodeDamagedBytes attacks decode with every prefix of a pod's bytes
// and every single byte inverted: it never panics, and whenever the
// generated code accepts the bytes, decode accepts them too and returns
// PodTransform of what the generated code decoded (a damaged pod is never
// accounted as something other than what it says).
func TestDecodeDamagedBytes(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	s, tr := newPodSkimmer(fams), PodTransform(fams)
	check := func(t *testing.T, b []byte) (accepted bool) {
		t.Helper()
		got, err := s.decode(b)
		var whole corev1.Pod
		if whole.Unmarshal(b) != nil {
			return false
		}
		if err != nil {
			t.Fatalf("%x: refused (%v) what the generated code decodes", b, err)
		}
		want, err := tr(&whole)
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(withoutKind(got), withoutKind(want)) {
			t.Fatalf("%x:\ndecoded %#v\nwant %#v", b, got, want)
		}
		return true
	}
	for name, p := range skimPods() {
		t.Run(name, func(t *testing.T) {
			b, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			accepted := 0
			for n := range len(b) {
				if check(t, b[:n]) {
					accepted++
				}
				flipped := append([]byte(nil), b...)
				flipped[n] ^= 0xff
				if check(t, flipped) {
					accepted++
				}
			}
			if accepted == 0 {
				t.Error("no damaged variant decodes: the comparison never ran")
			}
		})
	}
}
