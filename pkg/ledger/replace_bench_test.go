package ledger

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
)

// coldList is the initial list of a cold start as the pod watch hands it
// over: n pods, one in five a GPU pod (slimmed), the others the
// PartialObjectMetadata of a pod without managed resources (the shape of
// tests/relist).
func coldList(n int) []metav1.Object {
	transform := podwire.PodTransform([]effective.Family{effective.Nvidia()})
	pods := make([]metav1.Object, 0, n)
	for i := range n {
		if i%5 == 0 {
			out, err := transform(benchPod(i, i%2 == 0))
			if err != nil {
				panic(err)
			}
			pods = append(pods, out.(metav1.Object))
			continue
		}
		pods = append(pods, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("plain-%d", i), Namespace: fmt.Sprintf("team-%d", i%200),
			UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: fmt.Sprint(i + 1)}})
	}
	return pods
}

// BenchmarkColdReplacePods: the initial list of 150k pods (30k GPU pods)
// into an empty ledger, the step between the end of the list's stream and
// the first decision.
func BenchmarkColdReplacePods(b *testing.B) {
	pods := coldList(150_000)
	b.ReportAllocs()
	for b.Loop() {
		l := New(Options{Families: []effective.Family{effective.Nvidia()}, Log: logr.Discard()})
		l.ReplacePods(pods)
		if st := l.Stats(); st.Pods != 30_000 {
			b.Fatalf("%d GPU pods recorded, want 30000", st.Pods)
		}
	}
}
