package admitqueue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// TestPausedReplicaProvesItsView: a replica that was paused decides in a
// namespace only once its ledger knows every pod a fresh list of the
// namespace names (a pod the others admitted and stopped reserving while it
// was away); until then it refuses with an error naming the pod, and
// decides nothing. Once proved, the namespace is not listed again.
func TestPausedReplicaProvesItsView(t *testing.T) {
	missing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "admitted-meanwhile", UID: "u-meanwhile"}}
	lists := 0
	base := fakeClient(t, missing)
	c := interceptor.NewClient(base, interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*metav1.PartialObjectMetadataList); ok {
			lists++
		}
		return cl.List(ctx, list, opts...)
	}})
	s, l, _, _ := newStore(t, c, "a")
	members(s).mu.Lock()
	members(s).suspect = time.Now() // paused a moment ago
	members(s).mu.Unlock()
	decided := false
	err := admitPod(context.Background(), s, "ns", "u1", "p1", func(req decision.Request) (verdict, error) {
		decided = true
		return verdict{Reserve: true, Demand: vec(1, 1)}, nil
	})
	if err == nil || decided || !strings.Contains(err.Error(), "has not delivered pod ns/admitted-meanwhile") {
		t.Fatalf("pod unknown: err %v, decided %v", err, decided)
	}
	l.UpsertPod(testpod.New("admitted-meanwhile").NS("ns").UID("u-meanwhile").App("c", testpod.GPU(1), testpod.Mem(1024)).Build())
	for i := range 2 {
		if err := reserve(context.Background(), s, fmt.Sprint("u", i+2), fmt.Sprint("p", i+2), vec(1, 1)); err != nil {
			t.Fatalf("pod known: %v", err)
		}
	}
	if lists != 2 {
		t.Errorf("%d lists of the namespace, want 2 (once refused, once proved)", lists)
	}
}
