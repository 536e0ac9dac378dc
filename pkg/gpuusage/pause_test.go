package gpuusage

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
)

// TestLivenessSigns: a late heartbeat (the process was paused) or a long
// run of failed renewals makes the replica suspect since then; renewals
// failing for a few seconds make it not connected.
func TestLivenessSigns(t *testing.T) {
	var l liveness
	l.init()
	l.epoch = l.epoch.Add(-time.Hour) // a process running for an hour
	if l.suspectSince() != 0 || l.connected() != nil {
		t.Fatal("a replica that has not started is suspect")
	}
	now := l.now()
	l.lastBeat.Store(now - int64(2*time.Second)) // the beating goroutine last ran 2 s ago
	if got := l.suspectSince(); got == 0 || got > now {
		t.Fatalf("a late heartbeat: suspect since %d, want before %d", got, now)
	}
	l.lastBeat.Store(now)
	l.pausedAt.Store(now)
	if l.suspectSince() != now {
		t.Fatal("a pause seen: not suspect since it")
	}
	l.lastRenew.Store(now - int64(4*time.Second))
	if err := l.connected(); err == nil || !strings.Contains(err.Error(), "has not reached the API server") {
		t.Fatalf("renewals failing for 4s: connected = %v", err)
	}
	l.pausedAt.Store(0)
	l.lastRenew.Store(now - int64(6*time.Second))
	if l.suspectSince() == 0 {
		t.Fatal("renewals failing past staleAfter: not suspect")
	}
}

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
	s.progress.alive.pausedAt.Store(s.progress.alive.now())
	decided := false
	err := s.Admit(context.Background(), "ns", "u1", "p1", func() (Verdict, error) { decided = true; return Verdict{Reserve: true, Demand: vec(1, 1)}, nil })
	if err == nil || decided || !strings.Contains(err.Error(), "has not delivered pod ns/admitted-meanwhile") {
		t.Fatalf("pod unknown: err %v, decided %v", err, decided)
	}
	l.UpsertPod(testpod.New("admitted-meanwhile").NS("ns").UID("u-meanwhile").App("c", testpod.GPU(1), testpod.Mem(1024)).Build())
	for i := range 2 {
		if err := reserve(s, context.Background(), fmt.Sprint("u", i+2), fmt.Sprint("p", i+2), vec(1, 1)); err != nil {
			t.Fatalf("pod known: %v", err)
		}
	}
	if lists != 2 {
		t.Errorf("%d lists of the namespace, want 2 (once refused, once proved)", lists)
	}
}
