package summary

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/admission"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/events"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestDeniedEventsNames: what the summary recognises the denials' Events
// by is what pkg/events and pkg/admission write.
func TestDeniedEventsNames(t *testing.T) {
	if deniedComponent != events.Source || workloadAnnotation != events.WorkloadAnnotation ||
		deniedReasons[0] != admission.EventReasonQuotaExceeded || deniedReasons[1] != admission.EventReasonPolicyDenied {
		t.Fatal("the summary reads other Events than the denials'")
	}
}

var t0 = time.Unix(100000, 0)

// denialEvent is a denial's Event about kind/name in team-a, count times,
// last at t0+at.
func denialEvent(kind, name string, count int32, at time.Duration, message string) *corev1.Event {
	apiVersion := map[string]string{"ReplicaSet": "apps/v1", "Deployment": "apps/v1", "Namespace": "v1", "Pod": "v1",
		"StatefulSet": "apps/v1", "CronJob": "batch/v1", "Job": "batch/v1"}[kind]
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("%s.%s.%d", name, kind, at)},
		InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: name, Namespace: "team-a"},
		Reason:         admission.EventReasonQuotaExceeded, Message: message, Count: count, Type: corev1.EventTypeWarning,
		LastTimestamp: metav1.NewTime(t0.Add(at)), ReportingController: events.Source, Source: corev1.EventSource{Component: events.Source}}
}

// TestDeniedWorkloads: the denials' Events fold into their workloads: a
// Deployment once (its ReplicaSets' Events, marked as recorded on it, are
// not listed again), counts summed, the latest message; Events of a
// Namespace or a Pod, of another component or reason, or older than the
// window are not listed; the latest first.
func TestDeniedWorkloads(t *testing.T) {
	rsOfWeb := denialEvent("ReplicaSet", "web-7d9f", 7, 0, "pod team-a/web-7d9f-a denied: over")
	rsOfWeb.Annotations = map[string]string{events.WorkloadAnnotation: "Deployment/web"}
	other := denialEvent("StatefulSet", "db", 1, 0, "x")
	other.ReportingController, other.Source.Component = "someone-else", "someone-else"
	otherReason := denialEvent("StatefulSet", "cache", 1, 0, "x")
	otherReason.Reason = "FailedCreate"
	evs := []*corev1.Event{
		rsOfWeb,
		denialEvent("Deployment", "web", 3, time.Minute, "ReplicaSet web-7d9f (4 replicas): pod team-a/web-7d9f-a denied: older"),
		denialEvent("Deployment", "web", 2, 2*time.Minute, "ReplicaSet web-8e0a (4 replicas): pod team-a/web-8e0a-b denied: latest"),
		denialEvent("StatefulSet", "train", 1, 30*time.Second, "pod team-a/train-3 denied: policy"),
		denialEvent("CronJob", "nightly", 1, -2*time.Hour, "too old"),
		denialEvent("Namespace", "team-a", 5, 0, "a bare pod"),
		denialEvent("Pod", "p", 5, 0, "a claim"),
		other, otherReason,
	}
	got := deniedWorkloads(evs, t0.Add(3*time.Minute))
	want := []gpuadmitv1.DeniedWorkload{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", LastDenied: metav1.NewTime(t0.Add(2 * time.Minute)),
			Reason: admission.EventReasonQuotaExceeded, Message: "ReplicaSet web-8e0a (4 replicas): pod team-a/web-8e0a-b denied: latest", Count: 5},
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "train", LastDenied: metav1.NewTime(t0.Add(30 * time.Second)),
			Reason: admission.EventReasonQuotaExceeded, Message: "pod team-a/train-3 denied: policy", Count: 1},
	}
	if !sameDenied(got, want) {
		t.Fatalf("denied workloads\n%+v\nwant\n%+v", got, want)
	}
}

// TestForgedDenialEvents: Events anyone allowed to create Events in the
// namespace may write, naming gpuadmit's component: a flood of workloads
// is listed 20 at most, a long message is cut (the status write still
// succeeds), absurd counts and names do not break it, and the charge,
// the limits and the reservations the summary shows are those of the
// ledger, unchanged: the list decides nothing.
func TestForgedDenialEvents(t *testing.T) {
	kube := kubefake.NewClientset()
	ctx := t.Context()
	for i := range 500 {
		e := denialEvent("Deployment", fmt.Sprintf("forged-%03d", i), -5, time.Duration(i)*time.Second, strings.Repeat("é", 3000))
		if i == 0 {
			e.Count = 1 << 30
			e.InvolvedObject.Name = strings.Repeat("n", 300) // not a name: not listed
		}
		if _, err := kube.CoreV1().Events("team-a").Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := fakeClient(t)
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	l.UpsertQuota(testquota.New("team-a", "gpu", map[string]string{"limits.nvidia.com/gpumem": "24576"}))
	l.UpsertPod(testpod.New("a").NS("team-a").UID("a").App("c", testpod.GPU(1), testpod.Mem(8192)).Build())
	clk := clocktesting.NewFakeClock(t0.Add(10 * time.Minute))
	s := &Summarizer{Client: c, Ledger: l, Reservations: reserved{}, Clock: clk, Log: logr.Discard()}
	s.denied = startDenials(ctx, kube)
	if !cache.WaitForCacheSync(ctx.Done(), s.denied.informer.HasSynced) {
		t.Fatal("the Events' informer did not sync")
	}
	if n := s.Round(ctx); n != 1 {
		t.Fatalf("wrote %d namespaces, want team-a", n)
	}
	st := summaryOf(t, c, "team-a").Status
	if len(st.DeniedWorkloads) != gpuadmitv1.MaxDeniedWorkloads || st.DeniedWorkloads[0].Name != "forged-499" {
		t.Fatalf("%d denied workloads, first %+v; want the 20 latest", len(st.DeniedWorkloads), st.DeniedWorkloads[0])
	}
	for _, w := range st.DeniedWorkloads {
		if len(w.Message) > maxDeniedMessage || w.Count != 1 {
			t.Errorf("%s: message of %d bytes, count %d", w.Name, len(w.Message), w.Count)
		}
	}
	if st.Summary.GPUMem != "8192/24576" || st.Resources[1].Used != 8192 || st.Resources[1].Reserved != 0 {
		t.Errorf("the forged Events changed the charge shown: %+v %+v", st.Summary, st.Resources)
	}
	if got := l.Namespace("team-a", nil).Used.Of("nvidia"); got.MemMiB != 8192 {
		t.Errorf("ledger charge %+v", got)
	}
}

// TestDeniedWorkloadsAgeOut: the Summarizer lists a workload denied
// within the window and drops it once the window passed with no new
// denial; before the informer synced the status keeps its list.
func TestDeniedWorkloadsAgeOut(t *testing.T) {
	kube := kubefake.NewClientset()
	ctx := t.Context()
	if _, err := kube.CoreV1().Events("team-a").Create(ctx, denialEvent("Deployment", "web", 2, 0, "pod team-a/web-x denied: over"),
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := fakeClient(t)
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	l.UpsertQuota(testquota.New("team-a", "gpu", map[string]string{"limits.nvidia.com/gpu": "2"}))
	clk := clocktesting.NewFakeClock(t0.Add(time.Minute))
	s := &Summarizer{Client: c, Ledger: l, Reservations: reserved{}, Clock: clk, Log: logr.Discard()}
	s.denied = startDenials(ctx, kube)
	cache.WaitForCacheSync(ctx.Done(), s.denied.informer.HasSynced)
	s.Round(ctx)
	if got := summaryOf(t, c, "team-a").Status.DeniedWorkloads; len(got) != 1 || got[0].Name != "web" || got[0].Count != 2 {
		t.Fatalf("denied workloads %+v", got)
	}
	clk.SetTime(t0.Add(DeniedWindow + time.Second))
	s.Round(ctx)
	if got := summaryOf(t, c, "team-a").Status.DeniedWorkloads; len(got) != 0 {
		t.Fatalf("after the window, still %+v", got)
	}
}
