package main

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/randfill"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
	"github.com/gpuadmit/gpuadmit/pkg/gang"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
	"github.com/gpuadmit/gpuadmit/policy"
)

// keptFields lists, per kind, the fields the watches keep of an object
// with every field filled (metadata.annotations left to the annotation
// test, and the identity: name, namespace, uid, resourceVersion): spec and
// status fields to their second level (spec.devices), metadata fields by
// name (metadata.labels).
func keptFields(t *testing.T) map[string][]string {
	t.Helper()
	fams := append(effective.HAMiFamilies(), effective.Nvidia())
	managed := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	charger, err := dra.NewCharger([]dra.Class{{Name: governedClass, Family: "nvidia", Mode: dra.ModeCapacity, Driver: governedClass,
		MemoryCapacity: "memory", CoresCapacity: "cores"}}, []effective.Family{effective.Nvidia()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, w := range []struct {
		kind      string
		obj       runtime.Object
		seed      func(runtime.Object)
		transform toolscache.TransformFunc
	}{
		{"Node", &corev1.Node{}, nil, feed.NodeTransform},
		{"Namespace", &corev1.Namespace{}, nil, feed.NamespaceTransform},
		{"ResourceQuota", &corev1.ResourceQuota{}, func(o runtime.Object) {
			o.(*corev1.ResourceQuota).Spec.Hard["limits.nvidia.com/gpu"] = resource.MustParse("1")
		}, feed.QuotaTransform(fams)},
		{"Pod", &corev1.Pod{}, func(o runtime.Object) {
			p := o.(*corev1.Pod)
			p.Spec.Containers[0].Resources.Limits = managed
		}, podwire.PodTransform(fams)},
		{"ResourceClaim", &resourcev1.ResourceClaim{}, func(o runtime.Object) {
			governed(&o.(*resourcev1.ResourceClaim).Spec)
		}, feed.ClaimTransform(charger)},
		{"ResourceSlice", &resourcev1.ResourceSlice{}, nil, feed.SliceTransform},
		{"ResourceClaimTemplate", &resourcev1.ResourceClaimTemplate{}, func(o runtime.Object) {
			governed(&o.(*resourcev1.ResourceClaimTemplate).Spec.Spec)
		}, feed.TemplateTransform(charger)},
		{"DeviceClass", &resourcev1.DeviceClass{}, nil, feed.DeviceClassTransform},
		{"PodGroup", &schedulingv1beta1.PodGroup{}, nil, gang.Transform},
	} {
		filled(w.obj)
		if w.seed != nil {
			w.seed(w.obj)
		}
		kept, err := w.transform(w.obj)
		if err != nil {
			t.Fatalf("%s transform: %v", w.kind, err)
		}
		out[w.kind] = fieldPaths(t, kept)
	}
	return out
}

// governedClass is the DeviceClass the claims of keptFields ask for, so
// that the claim and template watches keep what they keep of a governed
// claim (of any other, its identity only).
const governedClass = "hami-core-gpu.project-hami.io"

// governed makes every request of spec ask for governedClass.
func governed(spec *resourcev1.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			r.Exactly.DeviceClassName = governedClass
		}
		for j := range r.FirstAvailable {
			r.FirstAvailable[j].DeviceClassName = governedClass
		}
	}
}

// filled fills every field of obj (two elements in each list and map).
func filled(obj runtime.Object) {
	randfill.NewWithSeed(1).NilChance(0).NumElements(2, 2).MaxDepth(12).Funcs(
		func(q *resource.Quantity, _ randfill.Continue) { *q = resource.MustParse("1") },
		func(tm *metav1.Time, _ randfill.Continue) { *tm = metav1.Unix(1000, 0) },
		func(tm *metav1.MicroTime, _ randfill.Continue) { *tm = metav1.NewMicroTime(metav1.Unix(1000, 0).Time) },
		func(r *runtime.RawExtension, _ randfill.Continue) { r.Raw = []byte(`{"a":1}`) },
		func(f *metav1.FieldsV1, _ randfill.Continue) { f.SetRawString(`{}`) },
	).Fill(obj)
}

// fieldPaths lists the fields of obj's JSON form as described at keptFields.
func fieldPaths(t *testing.T, obj any) []string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for top, v := range m {
		sub, ok := v.(map[string]any)
		if !ok {
			continue // apiVersion, kind
		}
		for k, v := range sub {
			if !nonZero(v) {
				continue // a struct the JSON form writes empty
			}
			if top == "metadata" && slices.Contains([]string{"name", "namespace", "uid", "resourceVersion", "annotations", "creationTimestamp"}, k) {
				continue
			}
			out = append(out, top+"."+k)
		}
	}
	slices.Sort(out)
	return out
}

// nonZero reports whether a decoded JSON value holds anything.
func nonZero(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			if nonZero(c) {
				return true
			}
		}
		return false
	case []any:
		return len(v) > 0
	case string:
		return v != ""
	case float64:
		return v != 0
	case bool:
		return v
	}
	return false
}

// reviewedPodFields maps each pod property of the policy input (what a
// review of a Pod gives the policies) to the Pod's field; the identity
// (name, generateName, uid) maps to "". A property added to the input
// without its field here fails TestTrustTableCoversThePolicyInput.
var reviewedPodFields = map[string]string{
	"name": "", "generateName": "", "uid": "",
	"labels":            "metadata.labels",
	"annotations":       "metadata.annotations",
	"nodeSelector":      "spec.nodeSelector",
	"priorityClassName": "spec.priorityClassName",
	"runtimeClassName":  "spec.runtimeClassName",
	"schedulerName":     "spec.schedulerName",
}

// TestTrustTableCoversThePolicyInput: every field of a reviewed Pod the
// policy input carries (policy/input.schema.json) is backticked in a row
// naming Pod, and the review's userInfo in some row.
func TestTrustTableCoversThePolicyInput(t *testing.T) {
	var schema struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(policy.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	rows := trustRows(t)
	var podSpans, allSpans []string
	for _, r := range rows {
		spans := codeSpans(r.input)
		allSpans = append(allSpans, spans...)
		if namesKind(r.input, "Pod") {
			podSpans = append(podSpans, spans...)
		}
	}
	pod, ok := schema.Properties["pod"]
	if !ok || len(pod.Properties) == 0 {
		t.Fatal("the policy input schema has no pod properties")
	}
	for prop := range pod.Properties {
		field, known := reviewedPodFields[prop]
		switch {
		case !known:
			t.Errorf("the policy input's pod.%s: say which field of the Pod it is in reviewedPodFields, and give that field its trust row", prop)
		case field != "" && !slices.Contains(podSpans, field):
			t.Errorf("the policy input carries a reviewed Pod's %s (pod.%s) but no row naming Pod names it in backticks", field, prop)
		}
	}
	if _, ok := schema.Properties["userInfo"]; ok && !slices.Contains(allSpans, "userInfo") {
		t.Error("the policy input carries the review's userInfo but no row names `userInfo` in backticks")
	}
}
