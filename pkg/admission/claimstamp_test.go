package admission

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
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
