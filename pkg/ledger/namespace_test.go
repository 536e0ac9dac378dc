package ledger

import (
	"maps"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
)

func TestNamespaceLabels(t *testing.T) {
	l := New(Options{})
	if s := l.Namespace("team-a", nil); s.LabelsKnown || s.Labels != nil {
		t.Fatalf("unknown namespace: %+v", s)
	}
	ns := testns.New("team-a", map[string]string{"gpu-tier": "bronze"})
	l.UpsertNamespace(ns)
	s := l.Namespace("team-a", nil)
	if !s.LabelsKnown || !maps.Equal(s.Labels, map[string]string{"gpu-tier": "bronze"}) {
		t.Fatalf("after upsert: known %v, labels %v", s.LabelsKnown, s.Labels)
	}
	// The ledger keeps its own copy: the informer's object may change.
	ns.Labels["gpu-tier"] = "gold"
	if got := l.Namespace("team-a", nil).Labels["gpu-tier"]; got != "bronze" {
		t.Errorf("the caller's map changed the ledger: %q", got)
	}
	// A snapshot handed out earlier keeps its labels when they change.
	l.UpsertNamespace(testns.New("team-a", map[string]string{"gpu-tier": "silver"}))
	if s.Labels["gpu-tier"] != "bronze" || l.Namespace("team-a", nil).Labels["gpu-tier"] != "silver" {
		t.Errorf("old snapshot %v, new %v", s.Labels, l.Namespace("team-a", nil).Labels)
	}
	l.UpsertNamespace(testns.New("team-b", nil))
	if s := l.Namespace("team-b", nil); !s.LabelsKnown || s.Labels == nil || len(s.Labels) != 0 {
		t.Errorf("a namespace without labels: known %v, labels %#v", s.LabelsKnown, s.Labels)
	}
	l.DeleteNamespace("team-a")
	if s := l.Namespace("team-a", nil); s.LabelsKnown {
		t.Errorf("deleted namespace still known: %+v", s)
	}
	// Usage and labels are independent: a namespace with pods but no
	// Namespace event is not known.
	l.UpsertQuota(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "q"}})
	if l.Namespace("team-c", nil).LabelsKnown {
		t.Error("a quota made the namespace known")
	}
}

func TestNamespaceHandlerAndTransform(t *testing.T) {
	l := New(Options{})
	h := feed.NamespaceHandler(l, logr.Discard())
	full := testns.New("team-a", map[string]string{"a": "1"})
	full.Annotations = map[string]string{"big": "x"}
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	full.Spec.Finalizers = []corev1.FinalizerName{"kubernetes"}
	slim, err := feed.NamespaceTransform(full)
	if err != nil {
		t.Fatal(err)
	}
	sn := slim.(*corev1.Namespace)
	if sn.Annotations != nil || sn.ManagedFields != nil || sn.Spec.Finalizers != nil || sn.Labels["a"] != "1" || sn.Name != "team-a" {
		t.Errorf("slimmed namespace %+v", sn)
	}
	if _, err := feed.NamespaceTransform(&corev1.Pod{}); err == nil {
		t.Error("transform of a Pod: no error")
	}
	h.OnAdd(sn, true)
	if !l.Namespace("team-a", nil).LabelsKnown {
		t.Fatal("add not applied")
	}
	h.OnUpdate(sn, testns.New("team-a", map[string]string{"a": "2"}))
	if got := l.Namespace("team-a", nil).Labels["a"]; got != "2" {
		t.Errorf("update: label a = %q", got)
	}
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-a", Obj: sn})
	if l.Namespace("team-a", nil).LabelsKnown {
		t.Error("tombstone not applied")
	}
	h.OnAdd("not a namespace", false) // logged, ignored
}
