package admission

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// claimReserver records what it is asked and answers verdict (or err).
type claimReserver struct {
	keys    []types.UID
	verdict decision.Result
	err     error
}

func (r *claimReserver) Admit(_ context.Context, uid types.UID, req decision.Request) (decision.Result, error) {
	if req.Claim == nil || req.Pod != nil {
		return decision.Result{}, errors.New("not a claim's request")
	}
	r.keys = append(r.keys, uid)
	return r.verdict, r.err
}

type governsHAMi struct{}

func (governsHAMi) GovernsClaim(c *resourcev1.ResourceClaim) bool {
	return c.Spec.Devices.Requests[0].Exactly != nil && c.Spec.Devices.Requests[0].Exactly.DeviceClassName == testclaim.HAMiDRAClass
}

func claimReview(t *testing.T, op admissionv1.Operation, c *resourcev1.ResourceClaim, kind string, reqUID string) admission.Request {
	t.Helper()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: types.UID(reqUID),
		Kind: metav1.GroupVersionKind{Group: "resource.k8s.io", Version: "v1", Kind: kind}, Namespace: c.Namespace, Name: c.Name,
		Operation: op, Object: runtime.RawExtension{Raw: raw}}}
}

// TestClaimValidator: a claim review is refused when it cannot be read or
// gpuadmit is not ready, decided and reserved under the claim's UID (a
// hand-made review without one under a key of its own request), denied
// with the policies' messages, failed closed when no decision is made.
func TestClaimValidator(t *testing.T) {
	hami := testclaim.HAMiDRA("team-a", "c", 1, 8192, 0)
	hami.UID = "claim-uid"
	noUID := testclaim.HAMiDRA("team-a", "forged", 1, 8192, 0)
	fpga := testclaim.HAMiDRA("team-a", "fpga", 1, 0, 0)
	fpga.Spec.Devices.Requests[0].Exactly.DeviceClassName = "fpga.example.com"
	allowed := decision.Result{Allowed: true, Effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 8192})}
	for _, tc := range []struct {
		name     string
		req      admission.Request
		gate     Gate
		verdict  decision.Result
		err      error
		code     int32
		allowed  bool
		keys     []types.UID
		inResult string
	}{
		{name: "a pod sent to the claims path", req: claimReview(t, admissionv1.Create, hami, "Pod", "r1"), code: http.StatusBadRequest, inResult: "expected a resource.k8s.io/v1 ResourceClaim"},
		{name: "an update is not decided", req: claimReview(t, admissionv1.Update, hami, "ResourceClaim", "r1"), allowed: true},
		{name: "an ungoverned class is not decided", req: claimReview(t, admissionv1.Create, fpga, "ResourceClaim", "r1"), allowed: true},
		{name: "not ready: refused", req: claimReview(t, admissionv1.Create, hami, "ResourceClaim", "r1"),
			gate: gateFunc(func() error { return errors.New("the watches have not synced") }), code: http.StatusInternalServerError,
			inResult: "not ready to decide on ResourceClaim team-a/c"},
		{name: "allowed, reserved under the claim's UID", req: claimReview(t, admissionv1.Create, hami, "ResourceClaim", "r1"),
			verdict: allowed, allowed: true, keys: []types.UID{"claim-uid"}},
		{name: "a hand-made review without a UID: a key of its own request", req: claimReview(t, admissionv1.Create, noUID, "ResourceClaim", "r9"),
			verdict: allowed, allowed: true, keys: []types.UID{"team-a/resourceclaim/forged/r9"}},
		{name: "denied with the policies' messages", req: claimReview(t, admissionv1.Create, hami, "ResourceClaim", "r1"),
			verdict: decision.Result{Denials: []string{"claim needs 8192 MiB"}}, code: http.StatusForbidden, keys: []types.UID{"claim-uid"},
			inResult: "claim needs 8192 MiB"},
		{name: "no decision: failed closed", req: claimReview(t, admissionv1.Create, hami, "ResourceClaim", "r1"),
			err: errors.New("the API server is unreachable"), code: http.StatusInternalServerError, keys: []types.UID{"claim-uid"},
			inResult: "no decision for ResourceClaim team-a/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			r := &claimReserver{verdict: tc.verdict, err: tc.err}
			v := &ClaimValidator{Gate: tc.gate, Claims: governsHAMi{}, Reserver: r, Metrics: m}
			resp := v.Handle(context.Background(), tc.req)
			if resp.Allowed != tc.allowed || (tc.code != 0 && resp.Result.Code != tc.code) {
				t.Fatalf("allowed %v code %d (%s); want %v %d", resp.Allowed, resp.Result.Code, resp.Result.Message, tc.allowed, tc.code)
			}
			if !strings.Contains(resp.Result.Message, tc.inResult) {
				t.Errorf("message %q lacks %q", resp.Result.Message, tc.inResult)
			}
			if strings.Join(toStrings(r.keys), ",") != strings.Join(toStrings(tc.keys), ",") {
				t.Errorf("reserved under %v, want %v", r.keys, tc.keys)
			}
		})
	}
}

func toStrings(uids []types.UID) []string {
	out := make([]string, len(uids))
	for i, u := range uids {
		out[i] = string(u)
	}
	return out
}
