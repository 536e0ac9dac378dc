package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Mutator is the mutating handler of pods: it adds the
// gpuadmit.io/effective annotation to GPU pods and, with Stamp, the
// requesting-user stamp (pkg/stamp) to every pod it reviews. It never
// denies a well-formed review (an invalid GPU request is left for the
// validating handler to refuse with its message), and patches nothing when
// the annotations already hold their values (reinvocation is idempotent).
//
// At CREATE the stamp names the requester, overwriting whatever the pod
// carries, unless the requester is a trusted pod creator and the pod
// carries a valid stamp (the controller copied it from a stamped
// template). At UPDATE the stamp is the old pod's, verbatim: nobody moves
// a running pod to another user (the webhook configuration sends an
// UPDATE only when it edits the stamp).
type Mutator struct {
	Gate    Gate
	Demand  Demander
	Metrics *Metrics
	// Stamp writes the requesting-user stamp; nil: none.
	Stamp Stamps
}

// Stamps chooses and signs the requesting-user stamp (*stamp.Stamper).
type Stamps interface {
	// Choose returns the user to stamp on an object of namespace ns
	// created or changed by requester, controlled by owner (nil: none),
	// carrying annotations.
	Choose(ns, requester string, owner *metav1.OwnerReference, annotations map[string]string) string
	// Stamp returns the annotations stamping user in namespace ns.
	Stamp(ns, user string) map[string]string
}

var _ admission.Handler = (*Mutator)(nil)

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason := m.handle(ctx, req)
	m.Metrics.observe(webhookMutate, req.Namespace, resp, reason, start)
	return resp
}

func (m *Mutator) handle(ctx context.Context, req admission.Request) (admission.Response, string) {
	pod, bad := decodePod(req)
	if bad != nil {
		return *bad, reasonBadRequest
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed(""), reasonNotCreate
	}
	set, drop, err := stampOf(m.Stamp, req, pod.Namespace, metav1.GetControllerOfNoCopy(pod), pod.Annotations)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err), reasonBadRequest
	}
	value, resp, reason := m.effective(ctx, pod)
	if !resp.Allowed {
		return resp, reason
	}
	if value != "" {
		set[EffectiveAnnotation] = value
	}
	ops := annotationOps("/metadata/annotations", pod.Annotations, set, drop)
	if len(ops) == 0 {
		if reason == reasonGPU {
			reason = reasonUnchanged
		}
		return resp, reason
	}
	out := patched(ops...)
	out.Warnings = resp.Warnings
	return out, reason
}

// effective returns the gpuadmit.io/effective annotation's value for pod
// ("" : none to write) and the response to give when nothing is patched
// (allowed, with its warnings; or the refusal while the gate is closed).
func (m *Mutator) effective(ctx context.Context, pod *corev1.Pod) (string, admission.Response, string) {
	d, err := m.Demand.Demand(ctx, pod)
	if d != nil || err != nil { // a GPU pod (or an invalid one)
		if resp, blocked := gate(m.Gate, subject{kind: "pod", ref: podRef(pod)}); blocked {
			return "", resp, reasonNotReady
		}
	}
	var inv *effective.InvalidError
	switch {
	case errors.As(err, &inv):
		// The validating handler denies it, naming the container and value.
		return "", admission.Allowed(""), reasonInvalid
	case err != nil:
		logf.FromContext(ctx).Error(err, "computing the effective demand", "pod", klog.KObj(pod))
		return "", admission.Allowed("").WithWarnings(fmt.Sprintf("gpuadmit: effective demand not annotated: %v", err)), reasonError
	case d == nil:
		return "", admission.Allowed(""), reasonNonGPU
	case len(d.Unresolved()) > 0:
		return "", admission.Allowed("").WithWarnings(fmt.Sprintf(
			"gpuadmit: %s not annotated: memory of containers %s is a percentage of a device of unknown size",
			EffectiveAnnotation, strings.Join(unresolved(d), ", "))), reasonUnresolved
	}
	want, err := json.Marshal(annotationOf(d))
	if err != nil {
		return "", admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: encoding the annotation: %w", err)), reasonError
	}
	return string(want), admission.Allowed(""), reasonGPU
}

// annotationValue is the annotation's JSON: the first family's (nvidia)
// effective demand at the top level, every other family's under families.
type annotationValue struct {
	effective.Vector
	Families map[string]effective.Vector `json:"families,omitempty"`
}

func annotationOf(d effective.Demands) annotationValue {
	var a annotationValue
	for _, dm := range d {
		if dm.Family == effective.NvidiaName {
			a.Vector = dm.Effective
			continue
		}
		if a.Families == nil {
			a.Families = map[string]effective.Vector{}
		}
		a.Families[dm.Family] = dm.Effective
	}
	return a
}

// unresolved names every family's containers whose memory is unresolved.
func unresolved(d effective.Demands) []string {
	var out []string
	for _, dm := range d {
		out = append(out, dm.Unresolved...)
	}
	return out
}

func patched(ops ...jsonpatch.Operation) admission.Response {
	pt := admissionv1.PatchTypeJSONPatch
	return admission.Response{
		Patches:           ops,
		AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt},
	}
}
