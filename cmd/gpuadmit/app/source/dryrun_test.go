package source

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// status is the API server's refusal with code and message.
func status(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

// TestRefusal: a dry run's refusal is gpuadmit's denial only when gpuadmit's
// validating webhook denied (its message, as the user would read it);
// another webhook's or admission step's refusal is a denial said to be
// theirs; a user who may not create pods gets an error naming the right;
// an answer that is no verdict (the webhook not ready) is an error, never
// an admission.
func TestRefusal(t *testing.T) {
	const quota = `namespace "team-t": nvidia.com/gpumem: pod needs 24576 MiB, 24576 MiB used + 0 MiB reserved, limit 45000 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`
	for _, tt := range []struct {
		name      string
		err       error
		want      []string
		gpuadmit  bool
		wantErr   string
		forbidden bool
	}{
		{name: "gpuadmit's denial", err: status(403, metav1.StatusReasonForbidden, `admission webhook "validate.gpuadmit.io" denied the request: `+quota),
			want: []string{quota}, gpuadmit: true},
		{name: "another webhook's", err: status(403, metav1.StatusReasonForbidden, `admission webhook "validation.gatekeeper.sh" denied the request: no GPUs on Fridays`),
			want: []string{"refused by the admission webhook validation.gatekeeper.sh (not gpuadmit's): no GPUs on Fridays"}},
		{name: "the quota admission", err: status(403, metav1.StatusReasonForbidden, `pods "x-abcde" is forbidden: exceeded quota: compute, requested: pods=1`),
			want: []string{`refused by the API server (not gpuadmit): pods "x-abcde" is forbidden: exceeded quota: compute, requested: pods=1`}},
		{name: "an invalid pod", err: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil),
			want: []string{`refused by the API server (not gpuadmit): Pod "x" is invalid`}},
		{name: "no right to create pods", err: status(403, metav1.StatusReasonForbidden, `pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "team-a"`),
			wantErr: `a server dry run needs create on pods in namespace team-a: pods is forbidden: User "alice" cannot create resource "pods"`, forbidden: true},
		{name: "the webhook not ready", err: status(http.StatusInternalServerError, metav1.StatusReasonInternalError, `Internal error occurred: gpuadmit is not ready to decide`),
			wantErr: "server dry run of the create gave no verdict: Internal error occurred: gpuadmit is not ready"},
		{name: "no answer", err: errors.New("connection reset"), wantErr: "server dry run of the create: connection reset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var v Verdict
			err := refusal(&v, "pods", "team-a", tt.err)
			if tt.wantErr != "" {
				var fe *DryRunForbiddenError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &fe) != tt.forbidden {
					t.Fatalf("error %v, want %q (forbidden %v)", err, tt.wantErr, tt.forbidden)
				}
				return
			}
			if err != nil || v.Allowed || v.ByGpuadmit != tt.gpuadmit || len(v.Denials) != 1 || !strings.HasPrefix(v.Denials[0], tt.want[0]) {
				t.Fatalf("verdict %+v, error %v; want denied by gpuadmit %v with %q", v, err, tt.gpuadmit, tt.want)
			}
			if tt.gpuadmit && !slices.Equal(v.Denials, tt.want) {
				t.Errorf("denials %q, want exactly the webhook's %q", v.Denials, tt.want)
			}
		})
	}
}

// TestDryRunMeta: the dry run's pod keeps the manifest's namespace,
// labels and annotations (the policies read them) under a generated name.
func TestDryRunMeta(t *testing.T) {
	m := dryRunMeta(metav1.ObjectMeta{Name: "trainer", Namespace: "team-a", UID: "u", ResourceVersion: "9",
		Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}})
	if m.Name != "" || m.GenerateName != "trainer-" || m.Namespace != "team-a" || m.UID != "" || m.ResourceVersion != "" ||
		m.Labels["a"] != "b" || m.Annotations["c"] != "d" {
		t.Errorf("%+v", m)
	}
	if m := dryRunMeta(metav1.ObjectMeta{Namespace: "team-a"}); m.GenerateName != "gpuadmit-eval-" {
		t.Errorf("unnamed: %+v", m)
	}
	// A pod copied from `kubectl get -o yaml` carries the mutating
	// webhook's old answer: it must not stand in for the webhook's
	// answer to this dry run (which may write none), nor leave the
	// manifest's own map changed.
	stale := map[string]string{effectiveAnnotation: `{"gpu":1,"gpumem":1024}`, "c": "d"}
	if m := dryRunMeta(metav1.ObjectMeta{Name: "copied", Annotations: stale}); m.Annotations[effectiveAnnotation] != "" || m.Annotations["c"] != "d" ||
		stale[effectiveAnnotation] == "" {
		t.Errorf("a manifest's own %s: %+v (manifest's %v)", effectiveAnnotation, m.Annotations, stale)
	}
}
