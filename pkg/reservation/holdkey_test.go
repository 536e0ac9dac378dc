package reservation

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// TestIsHoldKey: every hold's key is recognized (a review carrying one is
// refused), and no UID-less review's key of a real pod is (namespace
// "gang", a pod's name having no '/').
func TestIsHoldKey(t *testing.T) {
	for _, tc := range []struct {
		uid  types.UID
		want bool
	}{
		{HoldUID(gpuadmitv1.GangOptIn, "g"), true},
		{HoldUID(gpuadmitv1.GangPodGroup, "g"), true},
		{"gang/x/y", true},
		{"gang/pod-a", false},          // namespace gang, pod pod-a, no UID
		{"gang/pod-*request-1", false}, // namespace gang, generateName pod-
		{"3f2c-uuid", false},
		{"ns/gang/x", false},
	} {
		if got := IsHoldKey(tc.uid); got != tc.want {
			t.Errorf("IsHoldKey(%q) = %v, want %v", tc.uid, got, tc.want)
		}
	}
	if r, ok := Hold(gpuadmitv1.GangHold{Kind: gpuadmitv1.GangOptIn, Name: "g", MinCount: 2, Slots: 1, Demand: gpuadmitv1.Demand{GPU: 1}}, 1); !ok || !r.Hold {
		t.Errorf("Hold(...) = %+v, %v: a hold's reservation must carry the Hold flag", r, ok)
	}
}
