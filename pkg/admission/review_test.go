package admission

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// serve posts body to h and returns the review it answers.
func serve(t *testing.T, h http.Handler, body, contentType string) admissionv1.AdmissionReview {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/validate-pods", strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("no AdmissionReview back (%v): %s", err, rec.Body.String())
	}
	return out
}

func reviewJSON(t *testing.T, op admissionv1.Operation, mem int64, dry bool) string {
	t.Helper()
	pod := testpod.New("p").NS("team-a").UID("uid-p").Label("app", "x").App("c", testpod.GPU(1), testpod.Mem(mem)).Build()
	r := review(t, op, pod, dry)
	b, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &r.AdmissionRequest})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPodReviewsAnswerAsControllerRuntime: the one-pass decoding gives the
// validating handler the same pod, so every review gets the answer
// controller-runtime's decoding gets: allowed and then denied against the
// same quota (with the policy's message and warnings), dry-runs, updates,
// hostile bodies, a wrong content type.
func TestPodReviewsAnswerAsControllerRuntime(t *testing.T) {
	handler := func() *admission.Webhook {
		l, d := withQuota(24576, nil)
		return &admission.Webhook{Handler: &Validator{GPUPods: d, Reserver: l}}
	}
	twoPass, onePass := handler(), &PodReviews{Webhook: handler()}
	bodies := []struct{ name, body, contentType string }{
		{"allowed", reviewJSON(t, admissionv1.Create, 20480, false), "application/json"},
		{"denied: the quota holds the first", reviewJSON(t, admissionv1.Create, 8192, false), "application/json"},
		{"dry run", reviewJSON(t, admissionv1.Create, 1024, true), "application/json"},
		{"update", reviewJSON(t, admissionv1.Update, 1024, false), "application/json"},
		{"wrong content type", reviewJSON(t, admissionv1.Create, 1024, false), "text/plain"},
		{"v1beta1 review", strings.Replace(reviewJSON(t, admissionv1.Create, 1024, true), `"admission.k8s.io/v1"`, `"admission.k8s.io/v1beta1"`, 1), "application/json"},
	}
	for i, h := range append(hostile, hugePod()) {
		bodies = append(bodies, struct{ name, body, contentType string }{"hostile " + string(rune('a'+i)), h, "application/json"})
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			want, got := serve(t, twoPass, b.body, b.contentType), serve(t, onePass, b.body, b.contentType)
			w, g := want.Response, got.Response
			if w.Allowed != g.Allowed || w.UID != g.UID || !reflect.DeepEqual(w.Warnings, g.Warnings) ||
				(w.Result == nil) != (g.Result == nil) || (w.Result != nil && (w.Result.Code != g.Result.Code || g.Result.Message != onePassMessage(b.name, w.Result.Message))) {
				t.Errorf("controller-runtime: %+v %+v\none pass:           %+v %+v", w, w.Result, g, g.Result)
			}
		})
	}
}

// ownWords are the messages of the bodies the one-pass decoder describes
// in its own words (controller-runtime's differ), by case: the decoder's
// error, exactly.
var ownWords = map[string]string{
	"hostile a": "decoding the AdmissionReview: unexpected end of JSON input",
	"hostile b": "decoding the AdmissionReview: unexpected end of JSON input",
	"hostile d": "decoding the AdmissionReview: json: cannot unmarshal array into Go value of type v1.AdmissionReview",
}

// onePassMessage is the message the one-pass decoder must give for case
// name, whose controller-runtime message is crMessage.
func onePassMessage(name, crMessage string) string {
	if m, ok := ownWords[name]; ok {
		return m
	}
	return crMessage
}
