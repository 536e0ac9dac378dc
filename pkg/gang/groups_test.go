package gang_test

import (
	"context"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/gang"
)

func podGroup(name, uid string, minCount int32) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid),
		Labels: map[string]string{"big": "label"}}}
	if minCount > 0 {
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	} else {
		pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	}
	return pg
}

// TestGroups: the informer holds what gpuadmit reads (a gang's minCount;
// none for Basic), refuses to answer before it listed (a pod is refused
// rather than admitted as an ordinary pod), and remembers what it saw
// deleted (a gang's hold ends with its PodGroup).
func TestGroups(t *testing.T) {
	kube := fake.NewClientset(podGroup("gang", "u1", 4), podGroup("basic", "u2", 0))
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	g, err := gang.NewGroups(kube, clk.Now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Get("ns", "gang"); err == nil {
		t.Fatal("Get before the informer listed: no error; a pod would be decided without its gang")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = g.Start(ctx) }()
	waitFor(t, g.HasSynced)
	if got, ok, err := g.Get("ns", "gang"); err != nil || !ok || got.MinCount != 4 || got.UID != "u1" {
		t.Fatalf("gang: %+v %v %v", got, ok, err)
	}
	if got, ok, _ := g.Get("ns", "basic"); !ok || got.MinCount != 0 {
		t.Fatalf("basic: %+v %v; want present with no gang policy", got, ok)
	}
	if _, ok, _ := g.Get("other", "gang"); ok {
		t.Fatal("a PodGroup of another namespace is found")
	}
	if err := kube.SchedulingV1beta1().PodGroups("ns").Delete(ctx, "gang", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return g.Deleted("u1") })
	if _, ok, _ := g.Get("ns", "gang"); ok {
		t.Fatal("deleted PodGroup still found")
	}
}

// TestServed: the PodGroup API is read only where discovery lists it.
func TestServed(t *testing.T) {
	kube := fake.NewClientset()
	d := kube.Discovery().(*fakediscovery.FakeDiscovery)
	if ok, err := gang.Served(d); err != nil || ok {
		t.Fatalf("no scheduling.k8s.io/v1beta1: served %v %v", ok, err)
	}
	d.Resources = []*metav1.APIResourceList{{GroupVersion: gang.GroupVersion, APIResources: []metav1.APIResource{{Name: "podgroups"}}}}
	if ok, err := gang.Served(d); err != nil || !ok {
		t.Fatalf("podgroups listed: served %v %v", ok, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
