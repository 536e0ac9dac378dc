package events

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
)

// TestDenialEvents: between start and stop the denials become Warning
// Events in the object's namespace, from gpuadmit-webhook on the replica;
// the same denial again counts on the first Event; stop returns once
// everything recorded was written (no polling: the flush); before start
// and after stop nothing is recorded, and nothing panics.
func TestDenialEvents(t *testing.T) {
	ctx := t.Context()
	kube := fake.NewClientset()
	ev := New(kube, "replica-0", logr.Discard())
	rs := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid", Namespace: "team-a"}
	ns := corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "team-a", Namespace: "team-a"}

	ev.Denied(ctx, rs, admission.EventReasonQuotaExceeded, "before start")
	ev.Start()
	for range 3 {
		ev.Denied(ctx, rs, admission.EventReasonQuotaExceeded, "pod team-a/web-7d9f-x denied: over the limit")
	}
	ev.Denied(ctx, ns, admission.EventReasonPolicyDenied, "pod team-a/p denied: no gpucores")
	ev.Stop()
	ev.Denied(ctx, rs, admission.EventReasonQuotaExceeded, "after stop")
	ev.Stop() // twice: harmless

	list, err := kube.CoreV1().Events("team-a").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.Event{}
	for _, e := range list.Items {
		got[e.InvolvedObject.Kind] = e
	}
	if len(list.Items) != 2 {
		t.Fatalf("%d Events, want 2 (one per object): %+v", len(list.Items), list.Items)
	}
	for _, want := range []struct {
		ref     corev1.ObjectReference
		reason  string
		message string
		count   int32
	}{
		{rs, admission.EventReasonQuotaExceeded, "pod team-a/web-7d9f-x denied: over the limit", 3},
		{ns, admission.EventReasonPolicyDenied, "pod team-a/p denied: no gpucores", 1},
	} {
		e := got[want.ref.Kind]
		if e.InvolvedObject != want.ref || e.Reason != want.reason || e.Message != want.message || e.Count != want.count ||
			e.Type != corev1.EventTypeWarning || e.Source != (corev1.EventSource{Component: Source, Host: "replica-0"}) ||
			e.ReportingController != Source || e.ReportingInstance != "replica-0" {
			t.Errorf("Event %+v\nwant about %+v, %s %q, count %d, from %s on replica-0", e, want.ref, want.reason, want.message, want.count, Source)
		}
	}
}

// TestDenialEventsStopIsBounded: an API server that does not answer holds
// stop for eventsFlushTimeout, no longer, and the review's side never
// waits (Denied returns at once).
func TestDenialEventsStopIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		kube := fake.NewClientset()
		kube.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
			<-release
			return false, nil, nil
		})
		ev := New(kube, "replica-0", logr.Discard())
		ev.Start()
		start := time.Now()
		ev.Denied(context.Background(), corev1.ObjectReference{Kind: "Namespace", Name: "team-a", Namespace: "team-a"},
			admission.EventReasonQuotaExceeded, "denied")
		if d := time.Since(start); d != 0 {
			t.Errorf("Denied took %s", d)
		}
		ev.Stop()
		if d := time.Since(start); d != eventsFlushTimeout {
			t.Errorf("stop took %s, want the flush timeout %s", d, eventsFlushTimeout)
		}
		close(release)
	})
}
