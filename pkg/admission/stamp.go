package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

// stampOf returns the stamp annotations to set on an object of namespace
// ns controlled by owner (nil: none) carrying annotations, and those to
// remove: at CREATE the user s.Choose picks (none for a review without a username: the object is
// then charged as an unstamped one), at UPDATE the old object's stamp
// verbatim (absent keys removed). s nil: nothing.
func stampOf(s Stamps, req admission.Request, ns string, owner *metav1.OwnerReference, annotations map[string]string) (map[string]string, []string, error) {
	set := map[string]string{}
	if s == nil {
		return set, nil, nil
	}
	if req.Operation == admissionv1.Update {
		old, err := oldAnnotations(req)
		if err != nil {
			return nil, nil, err
		}
		return restore(old, annotations)
	}
	user := s.Choose(ns, req.UserInfo.Username, owner, annotations)
	if user == "" {
		return restore(nil, annotations)
	}
	return s.Stamp(ns, user), nil, nil
}

// restore sets the stamp annotations of old and removes those old lacks.
func restore(old, annotations map[string]string) (map[string]string, []string, error) {
	set := map[string]string{}
	var drop []string
	for _, k := range stamp.Annotations() {
		if v, ok := old[k]; ok {
			set[k] = v
		} else if _, ok := annotations[k]; ok {
			drop = append(drop, k)
		}
	}
	return set, drop, nil
}

// oldAnnotations reads the annotations of an UPDATE's old object.
func oldAnnotations(req admission.Request) (map[string]string, error) {
	if len(req.OldObject.Raw) == 0 {
		return nil, fmt.Errorf("gpuadmit: the UPDATE review of %s/%s carries no old object", req.Namespace, req.Name)
	}
	var old struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return nil, fmt.Errorf("gpuadmit: decoding the old object: %w", err)
	}
	return old.Metadata.Annotations, nil
}

// annotationOps are the JSON patch operations that set the annotations of
// set and remove those of drop in the annotations map at path (which holds
// have): one that creates the map when there is none, else one per key
// whose value changes, in key order ("/" in a key is "~1", "~" is "~0").
func annotationOps(path string, have, set map[string]string, drop []string) []jsonpatch.Operation {
	var ops []jsonpatch.Operation
	if have == nil {
		if len(set) == 0 {
			return nil
		}
		return []jsonpatch.Operation{jsonpatch.NewOperation("add", path, set)}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if v, ok := have[k]; !ok || v != set[k] {
			ops = append(ops, jsonpatch.NewOperation("add", path+"/"+pointerKey(k), set[k]))
		}
	}
	for _, k := range drop {
		if _, ok := have[k]; ok {
			ops = append(ops, jsonpatch.NewOperation("remove", path+"/"+pointerKey(k), nil))
		}
	}
	return ops
}

func pointerKey(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
