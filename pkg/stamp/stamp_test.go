package stamp

import (
	"bytes"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, MinKeyBytes) }

func newStamper(t *testing.T, creators ...Creator) *Stamper {
	t.Helper()
	s, err := New(testKey(7), creators)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	rsController = "system:serviceaccount:kube-system:replicaset-controller"
	kubeflow     = "system:serviceaccount:kubeflow:training-operator"
)

// TestVerifyRefusesForgeries: only the signature gpuadmit made, for the
// same namespace and user, with its own key, verifies.
func TestVerifyRefusesForgeries(t *testing.T) {
	s := newStamper(t)
	other, err := New(testKey(8), nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := s.Sign("ml", "alice")
	for _, c := range []struct {
		name, ns, user, sig string
		want                bool
	}{
		{"its own signature", "ml", "alice", alice, true},
		{"another user's name with alice's signature", "ml", "bob", alice, false},
		{"signature copied from another namespace", "dev", "alice", alice, false},
		{"signed with another key", "ml", "alice", other.Sign("ml", "alice"), false},
		{"a hand-written signature", "ml", "alice", "c2lnbmF0dXJl", false},
		{"not base64url", "ml", "alice", "!!!", false},
		{"padded", "ml", "alice", alice + "=", false},
		{"empty", "ml", "alice", "", false},
		{"the separator moved", "m", "l\x00alice", s.Sign("ml\x00", "alice"), false},
		{"no user", "ml", "", s.Sign("ml", ""), false},
	} {
		if got := s.Verify(c.ns, c.user, c.sig); got != c.want {
			t.Errorf("%s: Verify = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestChooseOverwritesUsers: whatever stamp a user writes (another user's
// name, a signature copied from another object), the requester is stamped
// unless it is a trusted creator carrying a valid stamp; an identity that
// only looks like a controller is no controller.
func TestChooseOverwritesUsers(t *testing.T) {
	s := newStamper(t, Creator{Group: "kubeflow.org", Kind: "PyTorchJob", Username: kubeflow})
	valid := s.Stamp("ml", "alice")
	forged := map[string]string{UserAnnotation: "alice", SignatureAnnotation: "forged"}
	otherNS := s.Stamp("dev", "alice")
	rs := ownerRef("apps/v1", "ReplicaSet")
	for _, c := range []struct {
		name, requester string
		owner           *metav1.OwnerReference
		annotations     map[string]string
		want            string
	}{
		{"a user writing another's name", "bob", rs, forged, "bob"},
		{"a user copying another's valid stamp", "bob", rs, valid, "bob"},
		{"a controller copying the template's stamp", rsController, rs, valid, "alice"},
		{"kube-controller-manager's own identity", "system:kube-controller-manager", rs, valid, "alice"},
		{"a configured pod creator", kubeflow, ownerRef("kubeflow.org/v1", "PyTorchJob"), valid, "alice"},
		{"a ReplicationController's pod", "system:serviceaccount:kube-system:replication-controller", ownerRef("v1", "ReplicationController"), valid, "alice"},
		{"a controller with a forged stamp", rsController, rs, forged, rsController},
		{"a controller with a stamp from another namespace", rsController, rs, otherNS, rsController},
		{"a controller with no stamp", rsController, rs, nil, rsController},
		{"a trusted creator, no owner", rsController, nil, valid, rsController},
		{"a trusted creator, owner of an unstamped kind (RayService)", kubeflow, ownerRef("ray.io/v1", "RayService"), valid, kubeflow},
		{"a trusted creator, owner a Pod", "system:kube-controller-manager", ownerRef("v1", "Pod"), valid, "system:kube-controller-manager"},
		{"a trusted creator, owner kind in another group", rsController, ownerRef("example.com/v1", "ReplicaSet"), valid, rsController},
		{"posing: a longer name", rsController + "-x", rs, valid, rsController + "-x"},
		{"posing: the bare controller name", "replicaset-controller", rs, valid, "replicaset-controller"},
		{"posing: another namespace's service account", "system:serviceaccount:ml:replicaset-controller", rs, valid,
			"system:serviceaccount:ml:replicaset-controller"},
		{"posing: case", "System:Kube-Controller-Manager", rs, valid, "System:Kube-Controller-Manager"},
		{"posing: the garbage collector", "system:serviceaccount:kube-system:generic-garbage-collector", rs, valid,
			"system:serviceaccount:kube-system:generic-garbage-collector"},
	} {
		if got := s.Choose("ml", c.requester, c.owner, c.annotations); got != c.want {
			t.Errorf("%s: Choose = %q, want %q", c.name, got, c.want)
		}
	}
}

func ownerRef(apiVersion, kind string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "o", UID: "o", Controller: ptr.To(true)}
}

// TestUserOf: a pod is charged to its verified stamp's user, else to its
// controller's service account, else to its own; a forged or copied stamp
// never moves the charge to the user it names.
func TestUserOf(t *testing.T) {
	s := newStamper(t, Creator{Group: "kubeflow.org", Kind: "PyTorchJob", Username: kubeflow},
		Creator{Group: "batch", Kind: "Job", Username: "system:serviceaccount:ops:jobs"})
	alice := s.Stamp("ml", "alice")
	pod := func() *testpod.Builder { return testpod.New("p").NS("ml").App("c", testpod.GPU(1)) }
	stamped := func(b *testpod.Builder, a map[string]string) *testpod.Builder {
		for k, v := range a {
			b = b.Annotate(k, v)
		}
		return b
	}
	for _, c := range []struct {
		name string
		pod  *testpod.Builder
		want string
	}{
		{"a verified stamp", stamped(pod(), alice), "alice"},
		{"a verified stamp wins over the controller", stamped(pod().Controller("apps/v1", "ReplicaSet", "r"), alice), "alice"},
		{"a forged name: the service account", pod().Annotate(UserAnnotation, "alice").Annotate(SignatureAnnotation, "x"),
			"system:serviceaccount:ml:default"},
		{"a stamp copied from another namespace", stamped(pod(), s.Stamp("dev", "alice")).Controller("apps/v1", "ReplicaSet", "r"), rsController},
		{"a name without signature", pod().Annotate(UserAnnotation, "alice").ServiceAccount("runner"), "system:serviceaccount:ml:runner"},
		{"a ReplicaSet's pod", pod().Controller("apps/v1", "ReplicaSet", "r"), rsController},
		{"a StatefulSet's pod", pod().Controller("apps/v1", "StatefulSet", "s"), kcmPrefix + "statefulset-controller"},
		{"a DaemonSet's pod", pod().Controller("apps/v1", "DaemonSet", "d"), kcmPrefix + "daemon-set-controller"},
		{"a ReplicationController's pod", pod().Controller("v1", "ReplicationController", "rc"), kcmPrefix + "replication-controller"},
		{"a configured creator replaces a built-in one", pod().Controller("batch/v1", "Job", "j"), "system:serviceaccount:ops:jobs"},
		{"a configured kind's pod", pod().Controller("kubeflow.org/v1", "PyTorchJob", "t"), kubeflow},
		{"a kind of another group", pod().Controller("example.com/v1", "ReplicaSet", "r"), "system:serviceaccount:ml:default"},
		{"an unknown controller", pod().Controller("example.com/v1", "Thing", "x").ServiceAccount("sa"), "system:serviceaccount:ml:sa"},
		{"a malformed apiVersion", pod().Controller("apps/v1/x", "ReplicaSet", "r"), "system:serviceaccount:ml:default"},
		{"a bare pod", pod().ServiceAccount("sa"), "system:serviceaccount:ml:sa"},
	} {
		if got := s.UserOf(c.pod.Build()); got != c.want {
			t.Errorf("%s: UserOf = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestUserOfIgnoresOwnersThatAreNoController: only the controller
// ownerReference names who created the pod.
func TestUserOfIgnoresOwnersThatAreNoController(t *testing.T) {
	s := newStamper(t)
	p := testpod.New("p").NS("ml").Controller("apps/v1", "ReplicaSet", "r").Build()
	no := false
	p.OwnerReferences[0].Controller = &no
	if got := s.UserOf(p); got != "system:serviceaccount:ml:default" {
		t.Errorf("UserOf = %q, want the pod's service account", got)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := New(testKey(1)[:MinKeyBytes-1], nil); err == nil {
		t.Error("a short key was accepted")
	}
	if _, err := New(testKey(1), []Creator{{Group: "x", Kind: "Y"}}); err == nil {
		t.Error("a pod creator without a username was accepted")
	}
}

func TestClaimUserOf(t *testing.T) {
	s := newStamper(t)
	yes := true
	claim := func(a map[string]string, owner string) *resourcev1.ResourceClaim {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ml", Annotations: a}}
		if owner != "" {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: owner, Name: "p", Controller: &yes}}
		}
		return c
	}
	for _, c := range []struct {
		name  string
		claim *resourcev1.ResourceClaim
		want  string
	}{
		{"a verified stamp", claim(s.Stamp("ml", "alice"), ""), "alice"},
		{"a stamp from another namespace", claim(s.Stamp("dev", "alice"), ""), ""},
		{"a forged name", claim(map[string]string{UserAnnotation: "alice", SignatureAnnotation: "x"}, ""), ""},
		{"a pod's template claim", claim(nil, "Pod"), kcmPrefix + "resourceclaim-controller"},
		{"another owner", claim(nil, "ConfigMap"), ""},
	} {
		if got := s.ClaimUserOf(c.claim); got != c.want {
			t.Errorf("%s: ClaimUserOf = %q, want %q", c.name, got, c.want)
		}
	}
}
