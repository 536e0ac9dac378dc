package podwire

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

// TestSlimPodKeepsItsUser: the ledger asks who a slim pod is charged to
// (stamp.UserOf): the answer is the whole pod's, for random pods (stamped
// validly, forged, or with controllers and service accounts at random),
// through the transform and through the wire decoder.
func TestSlimPodKeepsItsUser(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	s, err := stamp.New(bytes.Repeat([]byte{5}, stamp.MinKeyBytes), nil)
	if err != nil {
		t.Fatal(err)
	}
	controllers := []struct{ apiVersion, kind string }{{"apps/v1", "ReplicaSet"}, {"batch/v1", "Job"}, {"apps/v1", "DaemonSet"}, {"example.com/v1", "Thing"}}
	fill := randomPods(7)
	tr := PodTransform(fams)
	seen := map[string]bool{}
	for i := range 1000 {
		var p corev1.Pod
		fill.Fill(&p)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "gpu",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}})
		switch i % 4 {
		case 0:
			p.Annotations = s.Stamp(p.Namespace, "alice")
		case 1:
			p.Annotations = map[string]string{stamp.UserAnnotation: "alice", stamp.SignatureAnnotation: s.Sign("other", "alice")}
		}
		if c := controllers[(i/4)%len(controllers)]; i%4 >= 1 && len(p.OwnerReferences) > 0 {
			yes := true
			p.OwnerReferences[0].APIVersion, p.OwnerReferences[0].Kind, p.OwnerReferences[0].Controller = c.apiVersion, c.kind, &yes
		}
		want := s.UserOf(&p)
		seen[want] = true
		slim, err := tr(&p)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.UserOf(slim.(*corev1.Pod)); got != want {
			t.Fatalf("pod %d: the slim pod is charged to %q, the whole one to %q", i, got, want)
		}
		wire, err := checkSkim(t, fams, encodePB(t, &p))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.UserOf(wire.(*corev1.Pod)); got != want {
			t.Fatalf("pod %d: the decoded pod is charged to %q, the whole one to %q", i, got, want)
		}
	}
	if !seen["alice"] || !seen["system:serviceaccount:kube-system:replicaset-controller"] || len(seen) < 10 {
		t.Errorf("the generator hardly varies the users: %d seen", len(seen))
	}
}
