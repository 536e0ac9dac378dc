package admission

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// hostile AdmissionReviews: bad JSON, wrong kinds, missing objects, huge
// and absurd pods.
var hostile = []string{
	``,
	`{`,
	`null`,
	`[]`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","operation":"CREATE"}}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","kind":{"version":"v1","kind":"Secret"},"operation":"CREATE","object":{}}}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":"not a pod"}}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1e18","nvidia.com/gpumem":"9223372036854775807"}}}]}}}}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpumem":"-5","nvidia.com/gpucores":"1000"}}}]}}}}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"0.5"}}}]}}}}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"subResource":"status","operation":"UPDATE","object":{}}}`,
}

// hugePod is a review of a pod with more containers than accepted.
func hugePod() string {
	var b strings.Builder
	b.WriteString(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":[`)
	for i := range maxContainers + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"c` + strings.Repeat("x", i%7) + `","resources":{"limits":{"nvidia.com/gpu":"1"}}}`)
	}
	b.WriteString(`]}}}}`)
	return b.String()
}

// FuzzHandlers posts arbitrary bodies to both handlers behind
// controller-runtime's webhook: never a panic, always a well-formed review
// back; a refusal always carries a 4xx/5xx code and a message.
func FuzzHandlers(f *testing.F) {
	for _, s := range append(hostile, hugePod()) {
		f.Add([]byte(s))
	}
	l, d := withQuota(1<<40, nil)
	no := false
	validate := &admission.Webhook{Handler: &Validator{GPUPods: d, Reserver: l}, RecoverPanic: &no}
	handlers := []http.Handler{
		&admission.Webhook{Handler: &Mutator{Demand: computeDemand{}}, RecoverPanic: &no},
		validate, &PodReviews{Webhook: validate},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, h := range handlers {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req) // a panic fails the fuzz target (RecoverPanic is off)
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("no AdmissionReview back (%v): %s", err, rec.Body.String())
			}
			if r := out.Response; !r.Allowed && (r.Result == nil || r.Result.Code < 400 || r.Result.Message == "") {
				t.Fatalf("refusal without a code and a message: %+v", r.Result)
			}
		}
	})
}

// TestHostileReviews names what each hostile review gets.
func TestHostileReviews(t *testing.T) {
	l, d := withQuota(1<<40, nil)
	wh := &admission.Webhook{Handler: &Validator{GPUPods: d, Reserver: l}}
	for name, v := range map[string]http.Handler{"controller-runtime": wh, "one pass": &PodReviews{Webhook: wh}} {
		t.Run(name, func(t *testing.T) { hostileReviews(t, v) })
	}
}

func hostileReviews(t *testing.T, v http.Handler) {
	for _, tc := range []struct {
		name, body string
		code       int32
		msg        string
	}{
		{"bad JSON", `{`, http.StatusBadRequest, ""},
		{"no request", hostile[4], http.StatusBadRequest, "expected a v1 Pod"},
		{"no object", `{"request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE"}}`, http.StatusBadRequest, "no pod object"},
		{"wrong kind", hostile[6], http.StatusBadRequest, `expected a v1 Pod, got kind "Secret"`},
		{"object not a pod", hostile[7], http.StatusBadRequest, "decoding the pod"},
		{"absurd quantities", hostile[9], http.StatusForbidden, "nvidia.com/gpucores"},
		{"fractional count", hostile[10], http.StatusForbidden, "nvidia.com/gpu"},
		{"subresource", hostile[11], http.StatusBadRequest, `subresource "status"`},
		{"huge pod", hugePod(), http.StatusBadRequest, "more than the 1000 gpuadmit accepts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			v.ServeHTTP(rec, req)
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("no review back: %v", err)
			}
			r := out.Response
			if r.Allowed || r.Result == nil || r.Result.Code != tc.code || !strings.Contains(r.Result.Message, tc.msg) {
				t.Errorf("got allowed=%v result=%+v; want code %d with %q", r.Allowed, r.Result, tc.code, tc.msg)
			}
		})
	}
}
