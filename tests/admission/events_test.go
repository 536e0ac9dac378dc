package admission_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/admission"
	"github.com/gpuadmit/gpuadmit/pkg/events"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// eventsWait bounds the wait for the asynchronous recorder's writes.
const eventsWait = 30 * time.Second

// testDenialEvents: denials become Warning Events through the API server,
// as `kubectl get events` and `kubectl describe` show them: one denial one
// Event about the namespace, ten identical denials one Event counted 10
// (the correlator's dedup), and a ReplicaSet's pod an Event about the
// ReplicaSet. Each scenario has a namespace of its own, whose quota
// (24 GiB) the 30 GiB pods pass.
func testDenialEvents(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	for _, ns := range []string{"events-one", "events-ten", "events-owner"} {
		if err := c.Seed(ctx, ns, "24576"); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
	}
	denied := func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		err := c.CreatePod(ctx, p)
		if err == nil {
			t.Fatalf("pod %s/%s admitted over the quota", p.Namespace, p.Name)
		}
		local.MustContain(t, "denial", err.Error(), "limit 24576 MiB")
	}

	t.Run("one denial, one Event about the namespace", func(t *testing.T) {
		const ns = "events-one"
		denied(t, creates.GPUPod(ns, "too-big", "", 30720))
		e := awaitEvent(t, c, ns, func(e corev1.Event) bool { return true })
		t.Logf("Event %s/%s: %s %s about %s/%s: %s", e.Namespace, e.Name, e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		want := corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns, Namespace: ns}
		checkEvent(t, e, want, 1, "pod events-one/too-big denied: ", `namespace "events-one": nvidia.com/gpumem: pod needs 30720 MiB`,
			"limit 24576 MiB", "; the namespace's GPU usage against its limits: kubectl get gpuusage -n events-one")
		if n := len(gpuadmitEvents(t, c, ns)); n != 1 {
			t.Errorf("%d Events for one denial, want 1", n)
		}
		stdout, stderr, err := c.Kubectl(ctx, nil, "get", "events", "-n", ns)
		if err != nil {
			t.Fatalf("kubectl get events: %v: %s", err, stderr)
		}
		local.MustContain(t, "kubectl get events", stdout, "Warning", admission.EventReasonQuotaExceeded, "namespace/"+ns, "pod events-one/too-big denied")
	})

	t.Run("ten identical denials, one Event counted 10", func(t *testing.T) {
		const ns = "events-ten"
		for range 10 {
			denied(t, creates.GPUPod(ns, "again", "", 30720))
		}
		e := awaitEvent(t, c, ns, func(e corev1.Event) bool { return e.Count == 10 })
		checkEvent(t, e, corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns, Namespace: ns}, 10,
			"pod events-ten/again denied: ", "limit 24576 MiB")
		if events := gpuadmitEvents(t, c, ns); len(events) != 1 {
			t.Errorf("%d Events for ten identical denials, want one: %+v", len(events), events)
		}
	})

	t.Run("a ReplicaSet's pod: the Event is about the ReplicaSet", func(t *testing.T) {
		const ns = "events-owner"
		labels := map[string]string{"app": "web"}
		rs, err := c.Kube.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// As the ReplicaSet controller creates its pods: generateName, the
		// labels, the controller reference.
		p := creates.GPUPod(ns, "", "web-", 30720)
		p.Labels = labels
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
		denied(t, p)
		e := awaitEvent(t, c, ns, func(e corev1.Event) bool { return e.InvolvedObject.UID == rs.UID })
		checkEvent(t, e, corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Namespace: ns, UID: rs.UID}, 1,
			"pod events-owner/web-", " denied: ", "limit 24576 MiB")
		if strings.Contains(e.Message, "web-*") {
			t.Errorf("the Event names the generateName, not the name the API server generated before validation: %s", e.Message)
		}
		stdout, stderr, err := c.Kubectl(ctx, nil, "describe", "replicaset", "web", "-n", ns)
		if err != nil {
			t.Fatalf("kubectl describe: %v: %s", err, stderr)
		}
		local.MustContain(t, "kubectl describe replicaset", stdout, "Warning", admission.EventReasonQuotaExceeded, events.Source)
	})
}

// gpuadmitEvents lists the Events gpuadmit wrote in ns.
func gpuadmitEvents(t *testing.T, c *local.Cluster, ns string) []corev1.Event {
	t.Helper()
	list, err := c.Kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the Events of %s: %v", ns, err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Source.Component == events.Source {
			out = append(out, e)
		}
	}
	return out
}

// awaitEvent polls, for at most eventsWait, for an Event of gpuadmit's in
// ns for which ok holds (the recorder writes asynchronously).
func awaitEvent(t *testing.T, c *local.Cluster, ns string, ok func(corev1.Event) bool) corev1.Event {
	t.Helper()
	var found corev1.Event
	var seen []corev1.Event
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, eventsWait, true, func(context.Context) (bool, error) {
		seen = gpuadmitEvents(t, c, ns)
		for _, e := range seen {
			if ok(e) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no such Event in %s after %s; gpuadmit's Events there: %s", ns, eventsWait, describe(seen))
	}
	return found
}

// checkEvent checks a denial's Event: about want, Warning, counted count
// times, from gpuadmit-webhook on the replica, its message holding msg.
func checkEvent(t *testing.T, e corev1.Event, want corev1.ObjectReference, count int32, msg ...string) {
	t.Helper()
	if e.InvolvedObject != want || e.Namespace != want.Namespace {
		t.Errorf("Event %s/%s about %+v, want about %+v in %s", e.Namespace, e.Name, e.InvolvedObject, want, want.Namespace)
	}
	if e.Type != corev1.EventTypeWarning || e.Reason != admission.EventReasonQuotaExceeded || e.Count != count {
		t.Errorf("Event %s %s counted %d, want Warning %s counted %d", e.Type, e.Reason, e.Count, admission.EventReasonQuotaExceeded, count)
	}
	if e.Source != (corev1.EventSource{Component: events.Source, Host: "local"}) {
		t.Errorf("Event from %+v, want %s on the replica local", e.Source, events.Source)
	}
	local.MustContain(t, "the Event's message", e.Message, msg...)
}

func describe(events []corev1.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "\n  %s %s/%s x%d: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Count, e.Message)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
