package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The configuration's keys, read off the type: a decoding error that the
// JSON decoder reports without the key (a duration that does not parse)
// is named by walking the document along the type.

var durationType = reflect.TypeFor[metav1.Duration]()

// Keys lists every key of the configuration type, as dotted paths
// ("admission.reservations.confirmAfter"), the devices section's typed keys
// included, a list's keys after "[]" ("devices.iluvatars[].chipName");
// docs/configuration.md is tested against it.
func Keys() []string {
	var out []string
	walkType(reflect.TypeFor[Configuration](), "", func(path string, _ reflect.Type) { out = append(out, path) })
	return out
}

// walkType calls f with the path of every leaf field of t.
func walkType(t reflect.Type, prefix string, f func(path string, leaf reflect.Type)) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || (name == "" && !sf.Anonymous) {
			continue
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case sf.Anonymous: // metav1.TypeMeta
			walkType(ft, prefix, f)
		case ft.Kind() == reflect.Struct && ft != durationType:
			walkType(ft, prefix+name+".", f)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			walkType(ft.Elem(), prefix+name+"[].", f)
		default:
			f(prefix+name, ft)
		}
	}
}

// badDurations names the durations of the document js that do not parse.
func badDurations(js []byte) field.ErrorList {
	var doc map[string]any
	if json.Unmarshal(js, &doc) != nil {
		return nil
	}
	var errs field.ErrorList
	walkType(reflect.TypeFor[Configuration](), "", func(path string, leaf reflect.Type) {
		if leaf != durationType {
			return
		}
		v, ok := lookup(doc, strings.Split(path, "."))
		if !ok {
			return
		}
		if s, isString := v.(string); !isString || !parses(s) {
			errs = append(errs, field.Invalid(field.NewPath(path), v, "want a duration such as 5s or 1m30s"))
		}
	})
	return errs
}

func parses(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil
}

func lookup(doc map[string]any, keys []string) (any, bool) {
	var v any = doc
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
