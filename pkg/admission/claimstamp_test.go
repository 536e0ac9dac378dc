package admission

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

// TestClaimStamperChargesTheCreator: a claim naming another user (by hand,
// or with a valid stamp copied from elsewhere) is stamped with its
// creator, and the validating handler charges the claim to that creator.
func TestClaimStamperChargesTheCreator(t *testing.T) {
	s := testStamper(t)
	for _, c := range []struct {
		name        string
		annotations map[string]string
	}{
		{"no stamp", nil},
		{"another's name", map[string]string{stamp.UserAnnotation: "alice", stamp.SignatureAnnotation: "x"}},
		{"another's valid stamp", s.Stamp("team-a", "alice")},
		{"another namespace's stamp", s.Stamp("dev", "alice")},
	} {
		claim := testclaim.HAMiDRA("team-a", "c", 1, 8192, 0)
		claim.Annotations = c.annotations
		req := claimReview(t, admissionv1.Create, claim, "ResourceClaim", "r")
		req.UserInfo.Username = "bob"
		got := appliedAnnotations(t, req.Object.Raw, (&ClaimStamper{Stamp: s}).Handle(t.Context(), req))
		claim.Annotations = got
		if user := s.ClaimUserOf(claim); user != "bob" {
			t.Errorf("%s: the claim is charged to %q, want bob", c.name, user)
		}
		r := &capturingReserver{}
		stamped := claimReview(t, admissionv1.Create, claim, "ResourceClaim", "r")
		stamped.UserInfo.Username = "bob"
		v := &ClaimValidator{Claims: governsHAMi{}, Reserver: r, Users: s}
		if resp := v.Handle(t.Context(), stamped); !resp.Allowed || len(r.got) != 1 || r.got[0].ChargedUser != "bob" {
			t.Errorf("%s: validated as %+v, requests %d", c.name, resp.Result, len(r.got))
		}
	}
}

// fakePods is a PodReader over a fixed set of pods.
type fakePods map[string]*corev1.Pod

func (f fakePods) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := f[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

// TestClaimStamperChargesATemplateClaimToItsPod attacks the stamp of a
// claim made from a pod's ResourceClaimTemplate: it is charged to the
// user of the pod named by its controller ownerReference (never to the
// claim controller, shared by every user, nor to a stamp copied into the
// template), and the validating handler decides it for that same user. A
// claim naming a pod it does not belong to, or made by anyone but the
// claim controller, is charged to its creator.
func TestClaimStamperChargesATemplateClaimToItsPod(t *testing.T) {
	s := testStamper(t)
	const rcc = "system:serviceaccount:kube-system:resourceclaim-controller"
	alicesPod := withStamp(testpod.New("alices-pod").NS("team-a").UID("p").App("c", testpod.GPU(1)), s.Stamp("team-a", "alice")).Build()
	bobsPod := withStamp(testpod.New("bobs-pod").NS("team-a").UID("b").App("c", testpod.GPU(1)), s.Stamp("team-a", "bob")).Build()
	pods := fakePods{"team-a/alices-pod": alicesPod, "team-a/bobs-pod": bobsPod}
	owned := func(pod string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod, UID: uid, Controller: ptr.To(true)}}
	}
	for _, c := range []struct {
		name, requester string
		owner           []metav1.OwnerReference
		annotations     map[string]string
		want            string // "": refused
	}{
		{"alice's template claim", rcc, owned("alices-pod", "p"), nil, "alice"},
		{"kube-controller-manager's own identity", "system:kube-controller-manager", owned("alices-pod", "p"), nil, "alice"},
		{"bob's template carries alice's copied stamp", "system:kube-controller-manager", owned("bobs-pod", "b"),
			s.Stamp("team-a", "alice"), "bob"},
		{"bob's claim naming alice's pod as its owner", "bob", owned("alices-pod", "p"), nil, "bob"},
		{"bob's claim copying alice's stamp, owned by alice's pod", "bob", owned("alices-pod", "p"), s.Stamp("team-a", "alice"), "bob"},
		{"an owner with another UID (a pod re-created under the name)", rcc, owned("alices-pod", "other"), nil, ""},
		{"an owner that does not exist", rcc, owned("gone", "g"), nil, ""},
	} {
		claim := testclaim.HAMiDRA("team-a", "pod-gpu-x", 1, 8192, 0)
		claim.OwnerReferences, claim.Annotations = c.owner, c.annotations
		req := claimReview(t, admissionv1.Create, claim, "ResourceClaim", "r")
		req.UserInfo.Username = c.requester
		resp := (&ClaimStamper{Stamp: s, Pods: pods}).Handle(t.Context(), req)
		if c.want == "" {
			if resp.Allowed {
				t.Errorf("%s: allowed, want refused (the claim controller retries)", c.name)
			}
			continue
		}
		claim.Annotations = appliedAnnotations(t, req.Object.Raw, resp)
		if user := s.ClaimUserOf(claim); user != c.want {
			t.Errorf("%s: the ledger charges %q, want %q", c.name, user, c.want)
		}
		r := &capturingReserver{}
		stamped := claimReview(t, admissionv1.Create, claim, "ResourceClaim", "r")
		stamped.UserInfo.Username = c.requester
		v := &ClaimValidator{Claims: governsHAMi{}, Reserver: r, Users: s}
		if resp := v.Handle(t.Context(), stamped); !resp.Allowed || len(r.got) != 1 {
			t.Errorf("%s: validated as %+v, requests %d", c.name, resp.Result, len(r.got))
		} else if r.got[0].ChargedUser != c.want {
			t.Errorf("%s: decided for %q, want %q", c.name, r.got[0].ChargedUser, c.want)
		}
	}
}

// TestClaimStamperRestoresTheStampOnUpdate: an edit of a claim's stamp
// after CREATE (another user's valid stamp, a garbage name, removing it)
// is undone, so a replica that records the claim later reads the same user.
func TestClaimStamperRestoresTheStampOnUpdate(t *testing.T) {
	s := testStamper(t)
	bob := s.Stamp("team-a", "bob")
	for _, c := range []struct {
		name   string
		edited map[string]string
	}{
		{"alice's valid stamp", s.Stamp("team-a", "alice")},
		{"a name alone", map[string]string{stamp.UserAnnotation: "nobody"}},
		{"removed", map[string]string{"other": "x"}},
		{"unchanged", bob},
	} {
		old := testclaim.HAMiDRA("team-a", "c", 1, 8192, 0)
		old.Annotations = bob
		claim := old.DeepCopy()
		claim.Annotations = c.edited
		req := claimReview(t, admissionv1.Update, claim, "ResourceClaim", "r")
		req.OldObject = claimReview(t, admissionv1.Update, old, "ResourceClaim", "r").Object
		req.UserInfo.Username = "system:kube-controller-manager"
		claim.Annotations = appliedAnnotations(t, req.Object.Raw, (&ClaimStamper{Stamp: s}).Handle(t.Context(), req))
		if user := s.ClaimUserOf(claim); user != "bob" {
			t.Errorf("%s: after the edit the claim is charged to %q, want bob", c.name, user)
		}
	}
}
