package admission

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/go-logr/logr/funcr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

func TestValidator(t *testing.T) {
	gpuPod := func(mem int64) *testpod.Builder {
		return testpod.New("p").NS("team-a").UID("uid-1").App("c", testpod.GPU(1), testpod.Mem(mem))
	}
	for _, tc := range []struct {
		name        string
		op          admissionv1.Operation
		pod         *testpod.Builder
		dryRun      bool
		decideErr   error
		reserveFail bool
		noUID       bool
		blocked     error
		wantAllowed bool
		wantCode    int32
		wantMsg     string
		wantReserve types.UID // "" = none
		wantDecide  bool
	}{
		{name: "allowed create reserves under the pod UID", op: admissionv1.Create, pod: gpuPod(12288),
			wantAllowed: true, wantReserve: "uid-1", wantDecide: true},
		{name: "dry-run is decided but reserves nothing", op: admissionv1.Create, pod: gpuPod(12288), dryRun: true,
			wantAllowed: true, wantDecide: true},
		{name: "denied: 403 with the policy message", op: admissionv1.Create, pod: gpuPod(30720),
			wantCode: http.StatusForbidden, wantMsg: "over its nvidia.com/gpumem limit", wantDecide: true},
		{name: "decision error: 500, refused", op: admissionv1.Create, pod: gpuPod(1), decideErr: errors.New("policy not loaded"),
			wantCode: http.StatusInternalServerError, wantMsg: "policy not loaded", wantDecide: true},
		{name: "reservation not written: refused", op: admissionv1.Create, pod: gpuPod(1), reserveFail: true,
			wantCode: http.StatusInternalServerError, wantMsg: "writing the reservation", wantDecide: true},
		{name: "non-gpu pod: allowed, nothing reserved", op: admissionv1.Create,
			pod: testpod.New("web").NS("team-a").UID("u2").App("c", testpod.CPU("1")), wantAllowed: true},
		{name: "not ready: a GPU pod is refused with a 500 naming what is missing", op: admissionv1.Create, pod: gpuPod(1),
			blocked: errors.New("the pods, nodes watches have not synced yet"), wantCode: http.StatusInternalServerError,
			wantMsg: "gpuadmit is not ready to decide on pod team-a/p, so it is refused rather than admitted unchecked: the pods, nodes watches have not synced yet"},
		{name: "not ready: a non-GPU pod needs no decision", op: admissionv1.Create, blocked: errors.New("not synced"),
			pod: testpod.New("web").NS("team-a").UID("u2").App("c", testpod.CPU("1")), wantAllowed: true},
		{name: "not ready: a dry-run is refused too", op: admissionv1.Create, pod: gpuPod(1), dryRun: true,
			blocked: errors.New("no policy set is active"), wantCode: http.StatusInternalServerError, wantMsg: "no policy set is active"},
		{name: "no UID in the object: keyed by namespace/name", op: admissionv1.Create,
			pod: testpod.New("p").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(1)), noUID: true, wantAllowed: true,
			wantReserve: "team-a/p", wantDecide: true},
		{name: "update: allowed without a decision", op: admissionv1.Update, pod: gpuPod(30720), wantAllowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, d := withQuota(24576, tc.decideErr)
			l.fail = tc.reserveFail
			v := &Validator{Gate: gateFunc(func() error { return tc.blocked }), GPUPods: d, Reserver: l}
			pod := tc.pod.Build()
			if tc.noUID {
				pod.UID = ""
			}
			resp := v.Handle(t.Context(), review(t, tc.op, pod, tc.dryRun))
			if resp.Allowed != tc.wantAllowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tc.wantAllowed, resp.Result)
			}
			if !tc.wantAllowed {
				if resp.Result == nil || resp.Result.Code != tc.wantCode || !strings.Contains(resp.Result.Message, tc.wantMsg) {
					t.Errorf("result = %+v, want code %d and message containing %q", resp.Result, tc.wantCode, tc.wantMsg)
				}
			}
			if tc.wantAllowed && tc.wantDecide && tc.pod.Build().Spec.Containers[0].Resources.Limits.Name(testpod.GPUName, "").Value() > 0 &&
				(len(resp.Warnings) != 1 || resp.Warnings[0] != "w1") {
				t.Errorf("warnings = %q, want the policy's [w1]", resp.Warnings)
			}
			if got := len(d.calls) > 0; got != tc.wantDecide {
				t.Errorf("decided = %v, want %v", got, tc.wantDecide)
			}
			if len(d.calls) > 0 && d.calls[0] != tc.dryRun {
				t.Errorf("decision saw dryRun = %v", d.calls[0])
			}
			var keys []types.UID
			for k := range l.res {
				keys = append(keys, k)
			}
			switch {
			case tc.wantReserve == "" && len(keys) != 0:
				t.Errorf("reserved %v, want nothing", keys)
			case tc.wantReserve != "" && (len(keys) != 1 || keys[0] != tc.wantReserve):
				t.Errorf("reserved %v, want [%s]", keys, tc.wantReserve)
			}
		})
	}
}

// gateFunc is a Gate.
type gateFunc func() error

func (g gateFunc) Blocked() error { return g() }

func (g gateFunc) Stale() string { return "" }

// TestDenialLoggedOnce: a denied pod is logged once, at the default
// verbosity, with the request's logger: the pod, the resource, need, used
// and limit; an allowed pod is not logged.
func TestDenialLoggedOnce(t *testing.T) {
	l, d := withQuota(24576, nil)
	v := &Validator{GPUPods: d, Reserver: l}
	gpu := func(name string, mem int64) *corev1.Pod {
		return testpod.New(name).NS("team-a").UID("uid-"+name).App("c", testpod.GPU(1), testpod.Mem(mem)).Build()
	}
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0})
	ctx := logf.IntoContext(t.Context(), log)
	if resp := v.Handle(ctx, review(t, admissionv1.Create, gpu("fits", 20480), false)); !resp.Allowed {
		t.Fatalf("first pod denied: %+v", resp.Result)
	}
	if resp := v.Handle(ctx, review(t, admissionv1.Create, gpu("over", 8192), false)); resp.Allowed {
		t.Fatal("over the limit, allowed")
	}
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want one for the denial: %q", len(lines), lines)
	}
	for _, want := range []string{`"msg"="pod denied"`, `"pod"={"name"="over" "namespace"="team-a"}`, `"resource"="nvidia.com/gpumem"`,
		`"need"=8192`, `"used"=20480`, `"limit"=24576`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s lacks %s", lines[0], want)
		}
	}
}

// handedDown records the requests the Validator hands the Reserver.
type handedDown struct{ reqs []decision.Request }

func (h *handedDown) Admit(_ context.Context, _ types.UID, req decision.Request) (decision.Result, error) {
	h.reqs = append(h.reqs, req)
	return decision.Result{Allowed: true}, nil
}

// TestValidatorAnswersGPUOnce: the Validator asks "is this a GPU pod?"
// once, where it decodes the review: a pod that is not never reaches the
// Reserver; a GPU pod (app, init-only, native sidecar) reaches it with the
// answer handed down (NoManagedResource unset), so the decision under it
// evaluates it in full.
func TestValidatorAnswersGPUOnce(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		gpu  bool
	}{
		{"GPU pod", testpod.New("a").NS("team-a").UID("a").App("c", testpod.GPU(1)).Build(), true},
		{"init-only GPU", testpod.New("b").NS("team-a").UID("b").Init("i", testpod.GPU(1)).App("c", testpod.CPU("1")).Build(), true},
		{"native sidecar GPU", testpod.New("c").NS("team-a").UID("c").Sidecar("s", testpod.GPU(1)).App("c", testpod.CPU("1")).Build(), true},
		{"non-GPU pod", testpod.New("d").NS("team-a").UID("d").App("c", testpod.CPU("1")).Build(), false},
		{"another vendor's resources only", testpod.New("e").NS("team-a").UID("e").App("c", testpod.Res("example.com/fpga", "1")).Build(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &handedDown{}
			v := &Validator{GPUPods: gpuPodsOf{}, Reserver: h}
			if resp := v.Handle(t.Context(), review(t, admissionv1.Create, tt.pod, false)); !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			switch {
			case !tt.gpu && len(h.reqs) != 0:
				t.Fatalf("a pod that is not a GPU pod reached the Reserver: %+v", h.reqs)
			case tt.gpu && (len(h.reqs) != 1 || h.reqs[0].NoManagedResource):
				t.Fatalf("handed down %+v; want one request, NoManagedResource unset", h.reqs)
			}
		})
	}
}
