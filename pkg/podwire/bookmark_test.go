package podwire

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// initialEventsEnd is the annotation the API server sets on the bookmark
// that ends a watch's initial events; anyone who may edit a pod may set it
// there too, up to 256 KiB.
const initialEventsEnd = metav1.InitialEventsAnnotationKey

func bookmarkPod(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{initialEventsEnd: "true"}}}
}

// TestInitialEventsAnnotationDroppedOnReceipt: a pod's initial-events
// annotation ("true", or 256 KiB), whatever the pod (GPU, with claims,
// plain), is dropped by the informer transform and by the pod client's
// decoder alike; an object without a name (the API server's bookmark)
// keeps it, for the reflector.
func TestInitialEventsAnnotationDroppedOnReceipt(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	tr := PodTransform(fams)
	for name, p := range skimPods() {
		for _, value := range []string{"true", strings.Repeat("t", 256<<10-len(initialEventsEnd))} {
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, initialEventsEnd, value)
			slim, err := tr(p)
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := checkSkim(t, fams, encodePB(t, p)) // the decoder's is the transform's
			if err != nil {
				t.Fatal(err)
			}
			for _, out := range []runtime.Object{slim.(runtime.Object), decoded} {
				m, err := meta.Accessor(out)
				if err != nil {
					t.Fatal(err)
				}
				if _, kept := m.GetAnnotations()[initialEventsEnd]; kept != (p.Name == "") {
					t.Errorf("%s: a %d-byte initial-events annotation kept %v, want %v", name, len(value), kept, p.Name == "")
				}
			}
		}
	}
	b, err := checkSkim(t, fams, encodePB(t, bookmarkPod("10")))
	if m, ok := b.(*metav1.PartialObjectMetadata); err != nil || !ok || m.ResourceVersion != "10" || m.Annotations[initialEventsEnd] != "true" {
		t.Errorf("bookmark decoded as %#v (%v): the reflector would not see the end of the initial events", b, err)
	}
}
