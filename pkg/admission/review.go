package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// MaxReviewBytes bounds a review's body, as controller-runtime does (the
// webhook server refuses a larger one unread; the forwarder copies at most this).
const MaxReviewBytes = 7 << 20

// PodReviews serves AdmissionReviews (admission.k8s.io/v1) of pods to
// Webhook's handler as controller-runtime's admission.Webhook serves them,
// but reads the review and its pod in one decoding pass: the pod reaches
// the handler decoded, in the request's Object.Object, and decodePod uses
// it instead of decoding Object.Raw a second time (the pod is most of a
// review's bytes and of its decoding). Webhook.Handle still recovers
// panics and completes the response.
type PodReviews struct {
	Webhook *admission.Webhook
}

// podReview is an AdmissionReview whose request's object is read straight
// into a Pod (the outer field shadows the embedded request's "object").
type podReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *podRequest `json:"request"`
}

type podRequest struct {
	admissionv1.AdmissionRequest `json:",inline"`
	Object                       *corev1.Pod `json:"object"`
}

func (h *PodReviews) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, typ, bad := readPodReview(r)
	if bad != nil {
		writeReview(w, typ, *bad)
		return
	}
	writeReview(w, typ, h.Webhook.Handle(r.Context(), req))
}

// v1Review is the type of the reviews the API server sends and of every answer
// to a review that cannot be read.
func v1Review() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}
}

// readPodReview decodes the request's review and its type, or says why it
// cannot (a 400 response, or 413 for a body over the limit).
func readPodReview(r *http.Request) (admission.Request, metav1.TypeMeta, *admission.Response) {
	fail := func(code int32, err error) (admission.Request, metav1.TypeMeta, *admission.Response) {
		resp := admission.Errored(code, err)
		return admission.Request{}, v1Review(), &resp
	}
	if r.Body == nil || r.Body == http.NoBody {
		return fail(http.StatusBadRequest, errors.New("request body is empty"))
	}
	defer r.Body.Close()
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxReviewBytes+1))
	switch {
	case err != nil:
		return fail(http.StatusBadRequest, err)
	case len(body) > MaxReviewBytes:
		return fail(http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", MaxReviewBytes))
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return fail(http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", ct))
	}
	var review podReview
	var req admission.Request
	if err := utiljson.Unmarshal(body, &review); err == nil {
		if review.Request != nil {
			req.AdmissionRequest = review.Request.AdmissionRequest
			if review.Request.Object != nil {
				req.Object = runtime.RawExtension{Object: review.Request.Object}
			}
		}
	} else {
		// The object is not a pod: keep it raw, so that decodePod names
		// what is wrong with it, as controller-runtime's decoding lets it.
		review = podReview{}
		raw := admissionv1.AdmissionReview{Request: &req.AdmissionRequest}
		if err := utiljson.Unmarshal(body, &raw); err != nil {
			return fail(http.StatusBadRequest, fmt.Errorf("decoding the AdmissionReview: %w", err))
		}
		review.TypeMeta = raw.TypeMeta
	}
	// An empty apiVersion and kind are read as v1, and v1beta1 (the same
	// shape) is answered in v1beta1, as controller-runtime does.
	switch tm := review.TypeMeta; {
	case tm == (metav1.TypeMeta{}):
		return req, v1Review(), nil
	case tm.Kind == "AdmissionReview" && (tm.APIVersion == "admission.k8s.io/v1" || tm.APIVersion == "admission.k8s.io/v1beta1"):
		return req, tm, nil
	default:
		return fail(http.StatusBadRequest, fmt.Errorf("expected an admission.k8s.io/v1 AdmissionReview, got apiVersion %q, kind %q", tm.APIVersion, tm.Kind))
	}
}

// writeReview writes resp as an AdmissionReview of type typ.
func writeReview(w http.ResponseWriter, typ metav1.TypeMeta, resp admission.Response) {
	ar := admissionv1.AdmissionReview{TypeMeta: typ, Response: &resp.AdmissionResponse}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ar) // the connection broke: nothing to tell
}
