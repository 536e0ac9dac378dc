package podwire

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// podServer serves pods as the API server does in protobuf: a PodList, or
// a watch stream of ADDED events (length-delimited WatchEvents).
func podServer(t *testing.T, pods []corev1.Pod) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		if r.URL.Query().Get("watch") != "true" {
			_, _ = w.Write(encodePB(t, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: pods}))
			return
		}
		stream := protobufInfo(t, scheme.Codecs.WithoutConversion()).StreamSerializer
		fw := stream.NewFrameWriter(w)
		bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		for i := range len(pods) + 1 {
			ev := &metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: encodePB(t, bookmark)}}
			if i < len(pods) {
				ev = &metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: encodePB(t, &pods[i])}}
			}
			if err := stream.Encode(ev, fw); err != nil {
				t.Error(err)
			}
		}
	}))
}

// TestPodListWatch: through the pod client, listed and watched pods (many
// frames, each decoded while the next is read into the same buffer) are
// PodTransform of the pods decoded whole, a pod's initial-events annotation
// dropped, and the bookmark that ends the initial events keeps what the
// reflector reads.
func TestPodListWatch(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	var pods []corev1.Pod
	for range 20 {
		for _, p := range skimPods() {
			pods = append(pods, *p)
		}
	}
	for i := range pods {
		pods[i].Name = pods[i].Name + "-" + string(rune('a'+i%26))
		if i%2 == 0 { // set by a tenant: dropped on receipt
			metav1.SetMetaDataAnnotation(&pods[i].ObjectMeta, metav1.InitialEventsAnnotationKey, "true")
		}
	}
	srv := podServer(t, pods)
	defer srv.Close()
	lw, err := ListWatch(ProtobufConfig(&rest.Config{Host: srv.URL}), fams)
	if err != nil {
		t.Fatal(err)
	}
	tr := PodTransform(fams)
	same := func(i int, got runtime.Object) {
		t.Helper()
		want, err := tr(&pods[i])
		if err != nil || !apiequality.Semantic.DeepEqual(withoutKind(got), withoutKind(want)) {
			t.Errorf("pod %d: got %#v, want %#v (%v)", i, got, want, err)
		}
		if m, err := meta.Accessor(got); err != nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "" {
			t.Errorf("pod %d keeps the initial-events annotation (%v)", i, err)
		}
	}
	ctx := context.Background()
	list, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := list.(*metav1.List)
	if l.ResourceVersion != "9" || len(l.Items) != len(pods) {
		t.Fatalf("list: rv %q, %d items", l.ResourceVersion, len(l.Items))
	}
	items, err := meta.ExtractList(l) // as the reflector reads a list
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		same(i, items[i])
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range pods {
		ev, ok := <-w.ResultChan()
		if !ok || ev.Type != watch.Added {
			t.Fatalf("event %d: %v %v", i, ev.Type, ok)
		}
		same(i, ev.Object)
	}
	// The end of the initial events: the reflector reads the annotation.
	ev := <-w.ResultChan()
	if b, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Bookmark || !ok || b.ResourceVersion != "10" || b.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("bookmark: %v %#v", ev.Type, ev.Object)
	}
}

// TestWatchEventSerializer: a WatchEvent decodes to its type and its
// object's bytes; anything else is decoded by the wrapped serializer.
func TestWatchEventSerializer(t *testing.T) {
	stream := protobufInfo(t, skimCodecs(nil)).StreamSerializer
	raw := encodePB(t, skimPods()["plain"])
	for _, ev := range []*metav1.WatchEvent{
		{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: raw}},
		{Type: string(watch.Bookmark)},
	} {
		var buf bytes.Buffer
		if err := protobufInfo(t, scheme.Codecs.WithoutConversion()).StreamSerializer.Encode(ev, &buf); err != nil {
			t.Fatal(err)
		}
		var got metav1.WatchEvent
		if _, _, err := stream.Decode(buf.Bytes(), nil, &got); err != nil {
			t.Fatal(err)
		}
		if got.Type != ev.Type || string(got.Object.Raw) != string(ev.Object.Raw) {
			t.Errorf("got %s %q, want %s %q", got.Type, got.Object.Raw, ev.Type, ev.Object.Raw)
		}
	}
	data, err := (&corev1.PodList{Items: []corev1.Pod{{}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var l corev1.PodList
	if _, _, err := stream.Decode(data, nil, &l); err != nil || len(l.Items) != 1 {
		t.Errorf("a non-event: %v, %d items", err, len(l.Items))
	}
}
