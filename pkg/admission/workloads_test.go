package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
	"github.com/gpuadmit/gpuadmit/pkg/workloadcheck"
)

// deploymentJSON is a Deployment "train" of team-a: replicas pods asking
// one GPU and memMiB each.
func deploymentJSON(replicas string, memMiB int64) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"train","namespace":"team-a"},
		"spec":{"replicas":%s,"template":{"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"%d"}}}]}}}}`,
		replicas, memMiB)
}

func scaleJSON(replicas int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"train","namespace":"team-a"},"spec":{"replicas":%d}}`, replicas)
}

// fakeReader returns obj, or err.
type fakeReader struct {
	obj   []byte
	err   error
	reads int
}

func (r *fakeReader) Read(context.Context, schema.GroupVersionKind, string, string) (map[string]any, error) {
	r.reads++
	if r.err != nil {
		return nil, r.err
	}
	return workload.Decode(r.obj)
}

// workloadHandler is the handler on a ledger of team-a with a 24 GiB
// quota (and, with blocked, a closed gate).
func workloadHandler(t *testing.T, r *fakeReader, blocked bool) *WorkloadValidator {
	t.Helper()
	l := ledger.New(ledger.Options{Families: config.Families(config.Default()), Log: logr.Discard()})
	testns.Known(l, "team-a")
	l.UpsertQuota(testquota.New("team-a", "gpu", map[string]string{"limits.nvidia.com/gpumem": "24576"}))
	d, err := decision.New(nil, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := config.WorkloadKinds(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	g := gateFunc(func() error { return nil })
	if blocked {
		g = func() error { return errors.New("watches not synced") }
	}
	return &WorkloadValidator{Gate: g, GPUPods: d, Kinds: kinds, Checker: &workloadcheck.Checker{Fit: d}, Reader: r}
}

func workloadReview(op admissionv1.Operation, sub string, obj, old []byte, dryRun bool) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "r", Operation: op, Namespace: "team-a", Name: "train",
		Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, DryRun: ptr.To(dryRun),
		Resource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, SubResource: sub,
		Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: old}}}
	if sub == "scale" {
		req.Kind = metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	}
	return req
}

// TestWorkloadValidator attacks the handler: a workload past its limit is
// refused at CREATE, UPDATE and scale, dry run or not; a scale whose
// workload cannot be read is refused unless it shrinks; a shrink passes
// even while the gate is closed; nothing it cannot read is allowed.
func TestWorkloadValidator(t *testing.T) {
	for _, tt := range []struct {
		name      string
		req       admission.Request
		reader    *fakeReader
		blocked   bool
		allowed   bool
		code      int32
		msg       string
		wantReads int
	}{
		{name: "4 x 8 GiB into 24 GiB", req: workloadReview(admissionv1.Create, "", deploymentJSON("4", 8192), nil, false), code: 403,
			msg: "4 pods x 8192 MiB = 32768 MiB"},
		{name: "the same as a dry run", req: workloadReview(admissionv1.Create, "", deploymentJSON("4", 8192), nil, true), code: 403,
			msg: "can never run whole"},
		{name: "3 x 8 GiB", req: workloadReview(admissionv1.Create, "", deploymentJSON("3", 8192), nil, false), allowed: true},
		{name: "negative replicas", req: workloadReview(admissionv1.Create, "", deploymentJSON("-1", 8192), nil, false), code: 403,
			msg: "negative count -1"},
		{name: "fractional replicas", req: workloadReview(admissionv1.Create, "", deploymentJSON("2.5", 8192), nil, false), code: 403,
			msg: "not a whole number"},
		{name: "grown by UPDATE", req: workloadReview(admissionv1.Update, "", deploymentJSON("4", 8192), deploymentJSON("3", 8192), false), code: 403},
		{name: "shrunk by UPDATE while not ready", blocked: true,
			req: workloadReview(admissionv1.Update, "", deploymentJSON("2", 8192), deploymentJSON("4", 8192), false), allowed: true},
		{name: "grown while not ready", blocked: true, req: workloadReview(admissionv1.Create, "", deploymentJSON("1", 8192), nil, false), code: 500},
		{name: "scaled to 4", reader: &fakeReader{obj: deploymentJSON("3", 8192)}, wantReads: 1,
			req: workloadReview(admissionv1.Update, "scale", scaleJSON(4), scaleJSON(3), false), code: 403, msg: "4 pods x 8192 MiB"},
		{name: "scaled to 3", reader: &fakeReader{obj: deploymentJSON("1", 8192)}, wantReads: 1,
			req: workloadReview(admissionv1.Update, "scale", scaleJSON(3), scaleJSON(1), false), allowed: true},
		{name: "scale up, workload unreadable", reader: &fakeReader{err: errors.New("forbidden")}, wantReads: 1,
			req: workloadReview(admissionv1.Update, "scale", scaleJSON(2), scaleJSON(1), false), code: 403, msg: "could not be read to check it: forbidden"},
		{name: "scale down, workload unreadable", reader: &fakeReader{err: errors.New("forbidden")},
			req: workloadReview(admissionv1.Update, "scale", scaleJSON(0), scaleJSON(3), false), allowed: true},
		{name: "negative scale", reader: &fakeReader{obj: deploymentJSON("1", 8192)},
			req: workloadReview(admissionv1.Update, "scale", scaleJSON(-1), scaleJSON(3), false), code: 400, msg: "negative replicas"},
		{name: "no managed resource, while not ready", blocked: true, allowed: true,
			req: workloadReview(admissionv1.Create, "", []byte(strings.ReplaceAll(string(deploymentJSON("400", 8192)), "nvidia.com/", "example.com/")), nil, false)},
		{name: "not an object", req: workloadReview(admissionv1.Create, "", []byte(`[1]`), nil, false), code: 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.reader
			if r == nil {
				r = &fakeReader{err: errors.New("unexpected read")}
			}
			resp := workloadHandler(t, r, tt.blocked).Handle(context.Background(), tt.req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v: %+v", resp.Allowed, tt.allowed, resp.Result)
			}
			if !tt.allowed && (resp.Result == nil || resp.Result.Code != tt.code || !strings.Contains(resp.Result.Message, tt.msg)) {
				t.Fatalf("result %+v, want code %d saying %q", resp.Result, tt.code, tt.msg)
			}
			if r.reads != tt.wantReads {
				t.Fatalf("%d reads of the workload, want %d", r.reads, tt.wantReads)
			}
		})
	}
}

// TestWorkloadValidatorUnknownKind: a kind gpuadmit does not read is
// allowed untouched.
func TestWorkloadValidatorUnknownKind(t *testing.T) {
	req := workloadReview(admissionv1.Create, "", deploymentJSON("400", 8192), nil, false)
	req.Kind = metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Other"}
	if resp := workloadHandler(t, &fakeReader{}, false).Handle(context.Background(), req); !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
}

// TestWorkloadMetrics: each answer counts by kind and verdict, and under
// the validate-workloads webhook with its reason.
func TestWorkloadMetrics(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := workloadHandler(t, &fakeReader{}, false)
	h.Metrics = m
	h.Handle(context.Background(), workloadReview(admissionv1.Create, "", deploymentJSON("4", 8192), nil, false))
	h.Handle(context.Background(), workloadReview(admissionv1.Create, "", deploymentJSON("3", 8192), nil, false))
	for _, c := range []struct {
		got  float64
		what string
	}{
		{testutil.ToFloat64(m.workloads.WithLabelValues("Deployment", "denied")), "Deployment denied"},
		{testutil.ToFloat64(m.workloads.WithLabelValues("Deployment", "allowed")), "Deployment allowed"},
		{testutil.ToFloat64(m.decisions.WithLabelValues(webhookValidateWorkloads, "denied", reasonQuota, "team-a")), "validate-workloads quota denial"},
	} {
		if c.got != 1 {
			t.Errorf("%s counted %v times, want 1", c.what, c.got)
		}
	}
}
