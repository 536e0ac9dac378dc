package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/stamp"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

// WorkloadStamper is the mutating handler of workloads: it writes the
// requesting-user stamp (pkg/stamp) on every pod template of a workload
// of a kind Kinds knows (Deployments, ReplicaSets, StatefulSets, Jobs,
// CronJobs' job templates, the configured kinds, by their template paths)
// or a DaemonSet or ReplicationController, so that the pods its controller makes are charged to
// who created or last changed the template.
//
// At CREATE every template is stamped with Stamp.Choose's user (the
// requester, overwriting any stamp, unless a trusted creator copied a
// valid one on an object whose controller is of a kind whose templates
// are stamped: a ReplicaSet made from a stamped Deployment). Every template
// it reviews is stamped, whether or not it asks for a GPU (one may get it
// at pod CREATE from a LimitRange or another webhook): the webhook's
// matchCondition sends it every template that asks for a GPU or carries
// a stamp, so a copied stamp is always overwritten. At UPDATE a
// template unchanged apart from its stamp keeps the old object's stamp
// verbatim (a change by anyone else, a controller's or a label's, neither
// moves the pods' charge nor rolls them out; an edit of the stamp alone
// is undone); a changed template is stamped as at CREATE. It never denies
// a well-formed review and needs no gate (the key is loaded before it
// serves).
type WorkloadStamper struct {
	Kinds   *workload.Kinds
	Stamp   Stamps
	Metrics *Metrics
}

var _ admission.Handler = (*WorkloadStamper)(nil)

// daemonSet is the DaemonSet kind: its pods are stamped, though its pod
// count (one per node) is no workload check's.
var daemonSet = &workload.Kind{Group: "apps", Version: "v1", Kind: "DaemonSet",
	Templates: []workload.Template{{Path: workload.MustPath("spec.template")}}}

// replicationController is the core ReplicationController kind: its pods
// are stamped (its controller is a trusted pod creator), though no
// workload check counts it.
var replicationController = &workload.Kind{Group: "", Version: "v1", Kind: "ReplicationController",
	Templates: []workload.Template{{Path: workload.MustPath("spec.template")}}}

// stampedKind is the kind of a workload review whose templates are
// stamped: a kind Kinds knows, a DaemonSet or a ReplicationController.
func (w *WorkloadStamper) stampedKind(g metav1.GroupVersionKind) *workload.Kind {
	for _, k := range []*workload.Kind{daemonSet, replicationController} {
		if g.Group == k.Group && g.Version == k.Version && g.Kind == k.Kind {
			return k
		}
	}
	return w.Kinds.Lookup(g.Group, g.Version, g.Kind)
}

// Handle implements admission.Handler.
func (w *WorkloadStamper) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, reason := w.handle(req)
	w.Metrics.observe(webhookMutateWorkloads, req.Namespace, resp, reason, start)
	return resp
}

func (w *WorkloadStamper) handle(req admission.Request) (admission.Response, string) {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" {
		return admission.Allowed(""), reasonNotCreate
	}
	k := w.stampedKind(req.Kind)
	if k == nil {
		return admission.Allowed(""), reasonNonGPU // a kind gpuadmit is not configured to read
	}
	bad := func(err error) (admission.Response, string) {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("gpuadmit: %s %s/%s: %w", k.Kind, req.Namespace, req.Name, err)), reasonBadRequest
	}
	obj, err := workload.Decode(req.Object.Raw)
	if err != nil {
		return bad(err)
	}
	var old map[string]any
	if req.Operation == admissionv1.Update {
		if old, err = workload.Decode(req.OldObject.Raw); err != nil {
			return bad(fmt.Errorf("the old object: %w", err))
		}
	}
	owner, err := controllerOf(req.Object.Raw)
	if err != nil {
		return bad(err)
	}
	if !w.stampTemplates(k, req, owner, obj, old) {
		return admission.Allowed(""), reasonUnchanged
	}
	mutated, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("gpuadmit: encoding the stamped %s: %w", k.Kind, err)), reasonError
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated), reasonGPU
}

// controllerOf is the controller ownerReference of the object in raw
// (nil: none).
func controllerOf(raw []byte) (*metav1.OwnerReference, error) {
	var o struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("reading its ownerReferences: %w", err)
	}
	return metav1.GetControllerOf(&o.Metadata), nil
}

// stampTemplates writes the stamp of every template of obj (controlled by
// owner; old: the object before an UPDATE) and reports whether one changed.
func (w *WorkloadStamper) stampTemplates(k *workload.Kind, req admission.Request, owner *metav1.OwnerReference, obj, old map[string]any) bool {
	before := map[string]map[string]any{}
	if old != nil {
		for _, t := range k.TemplateObjects(old) {
			before[t.Where] = t.Template
		}
	}
	ns := req.Namespace
	changed := false
	for _, t := range k.TemplateObjects(obj) {
		have := templateAnnotations(t.Template)
		var set map[string]string
		if prev, ok := before[t.Where]; ok && sameApartFromStamp(prev, t.Template) {
			set = map[string]string{}
			for _, key := range stamp.Annotations() {
				if v, ok := templateAnnotations(prev)[key]; ok {
					set[key] = v
				}
			}
		} else if user := w.Stamp.Choose(ns, req.UserInfo.Username, owner, have); user != "" {
			set = w.Stamp.Stamp(ns, user)
		}
		if writeStamp(t.Template, have, set) {
			changed = true
		}
	}
	return changed
}

// writeStamp makes the template's stamp annotations exactly set (absent
// keys removed) and reports whether that changed anything.
func writeStamp(tmpl map[string]any, have, set map[string]string) bool {
	changed := false
	annotations := map[string]any{}
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta != nil {
		if a, ok := meta["annotations"].(map[string]any); ok {
			annotations = a
		}
	}
	for _, key := range stamp.Annotations() {
		v, want := set[key]
		cur, has := have[key]
		switch {
		case want && (!has || cur != v):
			annotations[key], changed = v, true
		case !want && has:
			delete(annotations, key)
			changed = true
		}
	}
	if !changed {
		return false
	}
	if meta == nil {
		meta = map[string]any{}
		tmpl["metadata"] = meta
	}
	meta["annotations"] = annotations
	return true
}

// templateAnnotations are a template's annotations that are strings.
func templateAnnotations(tmpl map[string]any) map[string]string {
	meta, _ := tmpl["metadata"].(map[string]any)
	a, _ := meta["annotations"].(map[string]any)
	out := make(map[string]string, len(a))
	for k, v := range a {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// sameApartFromStamp reports whether two templates are equal once their
// stamp annotations are left out.
func sameApartFromStamp(a, b map[string]any) bool {
	return reflect.DeepEqual(withoutStamp(a), withoutStamp(b))
}

// withoutStamp is a shallow copy of tmpl without the stamp annotations (an
// empty annotations map read as none).
func withoutStamp(tmpl map[string]any) map[string]any {
	out := maps.Clone(tmpl)
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta == nil {
		return out
	}
	meta = maps.Clone(meta)
	out["metadata"] = meta
	a, _ := meta["annotations"].(map[string]any)
	if a == nil {
		return out
	}
	a = maps.Clone(a)
	for _, key := range stamp.Annotations() {
		delete(a, key)
	}
	if len(a) == 0 {
		delete(meta, "annotations")
	} else {
		meta["annotations"] = a
	}
	if len(meta) == 0 {
		delete(out, "metadata")
	}
	return out
}
