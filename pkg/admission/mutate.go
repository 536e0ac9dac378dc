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
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Mutator is the mutating handler: it adds the gpuadmit.io/effective
// annotation to GPU pods. It never denies a well-formed review (an invalid
// GPU request is left for the validating handler to refuse with its
// message), patches nothing for non-GPU pods, and patches nothing when the
// annotation already holds the value (reinvocation is idempotent).
type Mutator struct {
	Gate    Gate
	Demand  Demander
	Metrics *Metrics
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
	d, err := m.Demand.Demand(ctx, pod)
	if d != nil || err != nil { // a GPU pod (or an invalid one)
		if resp, blocked := gate(m.Gate, subject{kind: "pod", ref: podRef(pod)}); blocked {
			return resp, reasonNotReady
		}
	}
	var inv *effective.InvalidError
	switch {
	case errors.As(err, &inv):
		// The validating handler denies it, naming the container and value.
		return admission.Allowed(""), reasonInvalid
	case err != nil:
		logf.FromContext(ctx).Error(err, "computing the effective demand", "pod", klog.KObj(pod))
		return admission.Allowed("").WithWarnings(fmt.Sprintf("gpuadmit: effective demand not annotated: %v", err)), reasonError
	case d == nil:
		return admission.Allowed(""), reasonNonGPU
	case len(d.Unresolved()) > 0:
		return admission.Allowed("").WithWarnings(fmt.Sprintf(
			"gpuadmit: %s not annotated: memory of containers %s is a percentage of a device of unknown size",
			EffectiveAnnotation, strings.Join(unresolved(d), ", "))), reasonUnresolved
	}
	want, err := json.Marshal(annotationOf(d))
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: encoding the annotation: %w", err)), reasonError
	}
	if got, ok := pod.Annotations[EffectiveAnnotation]; ok && got == string(want) {
		return admission.Allowed(""), reasonUnchanged
	}
	return patched(annotationPatch(pod.Annotations == nil, string(want))), reasonGPU
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

// annotationPatch sets the annotation, creating the annotations map when the
// pod has none ("/" in the key is "~1" in a JSON pointer).
func annotationPatch(noAnnotations bool, value string) jsonpatch.Operation {
	if noAnnotations {
		return jsonpatch.NewOperation("add", "/metadata/annotations", map[string]string{EffectiveAnnotation: value})
	}
	return jsonpatch.NewOperation("add", "/metadata/annotations/"+strings.ReplaceAll(EffectiveAnnotation, "/", "~1"), value)
}

func patched(ops ...jsonpatch.Operation) admission.Response {
	pt := admissionv1.PatchTypeJSONPatch
	return admission.Response{
		Patches:           ops,
		AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt},
	}
}
