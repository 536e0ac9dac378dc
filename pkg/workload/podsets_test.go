package workload

import (
	"errors"
	"strings"
	"testing"
)

const gpuSpec = `{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}`

func tmpl() string { return `{"metadata":{"labels":{"app":"x"}},"spec":` + gpuSpec + `}` }

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	o, err := Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func builtin(t *testing.T, kind string) *Kind {
	t.Helper()
	ks, err := NewKinds(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"apps", "batch"} {
		if k := ks.Lookup(g, "v1", kind); k != nil {
			return k
		}
	}
	t.Fatalf("no built-in %s", kind)
	return nil
}

// TestBuiltinPodSets: each built-in kind's template and count, defaults
// included; a count that is negative, not whole or past 64 bits refuses
// the workload with a CountError, never reads as 0.
func TestBuiltinPodSets(t *testing.T) {
	meta := `"metadata":{"name":"w","namespace":"team-a"}`
	for _, tt := range []struct {
		kind, spec string
		count      int64
		err        string
	}{
		{"Deployment", `{"replicas":4,"template":` + tmpl() + `}`, 4, ""},
		{"Deployment", `{"template":` + tmpl() + `}`, 1, ""},
		{"Deployment", `{"replicas":0,"template":` + tmpl() + `}`, 0, ""},
		{"Deployment", `{"replicas":-1,"template":` + tmpl() + `}`, 0, "negative count -1"},
		{"Deployment", `{"replicas":1.5,"template":` + tmpl() + `}`, 0, "not a whole number"},
		{"Deployment", `{"replicas":"3","template":` + tmpl() + `}`, 0, "not a number"},
		{"Deployment", `{"replicas":99999999999999999999,"template":` + tmpl() + `}`, 0, "not a whole number"},
		{"StatefulSet", `{"replicas":3,"template":` + tmpl() + `}`, 3, ""},
		{"ReplicaSet", `{"replicas":2,"template":` + tmpl() + `}`, 2, ""},
		{"Job", `{"parallelism":8,"completions":8,"template":` + tmpl() + `}`, 8, ""},
		{"Job", `{"template":` + tmpl() + `}`, 1, ""},
		{"Job", `{"parallelism":8,"completions":2,"template":` + tmpl() + `}`, 2, ""},
		{"Job", `{"parallelism":8,"completions":-2,"template":` + tmpl() + `}`, 8, ""},
		{"Job", `{"parallelism":-1,"completions":2,"template":` + tmpl() + `}`, 0, "negative count -1"},
		{"CronJob", `{"schedule":"* * * * *","jobTemplate":{"spec":{"parallelism":3,"template":` + tmpl() + `}}}`, 3, ""},
	} {
		k := builtin(t, tt.kind)
		sets, err := k.PodSets(obj(t, `{`+meta+`,"spec":`+tt.spec+`}`))
		var ce *CountError
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &ce) {
				t.Errorf("%s %s: err %v, want a CountError with %q", tt.kind, tt.spec, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s %s: %v", tt.kind, tt.spec, err)
		case len(sets) != 1 || sets[0].Count != tt.count:
			t.Errorf("%s %s: sets %+v, want one of %d pods", tt.kind, tt.spec, sets, tt.count)
		default:
			p := sets[0].Pod
			if p.Name != "w" || p.Namespace != "team-a" || p.Labels["app"] != "x" || len(p.Spec.Containers) != 1 ||
				p.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "").Value() != 1 {
				t.Errorf("%s: pod %+v", tt.kind, p)
			}
		}
	}
}

// TestOverflowRefused: a product of counts past 64 bits is refused.
func TestOverflowRefused(t *testing.T) {
	k := Kind{Group: "x", Version: "v1", Kind: "X", Templates: []Template{{Path: MustPath("spec.template"),
		Replicas: []Factor{{Path: MustPath("spec.a"), Default: 1}, {Path: MustPath("spec.b"), Default: 1}}}}}
	_, err := k.PodSets(obj(t, `{"spec":{"a":4294967296,"b":4294967296,"template":`+tmpl()+`}}`))
	var ce *CountError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "64 bits") {
		t.Fatalf("err = %v, want a CountError past 64 bits", err)
	}
	sets, err := k.PodSets(obj(t, `{"spec":{"a":3037000499,"b":3037000499,"template":`+tmpl()+`}}`))
	if err != nil || sets[0].Count != 3037000499*3037000499 {
		t.Fatalf("sets %v, err %v", sets, err)
	}
}

func TestMissingTemplateIsAbsent(t *testing.T) {
	sets, err := builtin(t, "Deployment").PodSets(obj(t, `{"spec":{"replicas":3}}`))
	if err != nil || len(sets) != 0 {
		t.Fatalf("sets %v, err %v: want none", sets, err)
	}
	if _, err := builtin(t, "Deployment").PodSets(obj(t, `{"spec":{"template":{"metadata":{}}}}`)); err == nil {
		t.Fatal("a template without a spec was read")
	}
}

func TestSetScale(t *testing.T) {
	k := builtin(t, "Deployment")
	o := obj(t, `{"spec":{"replicas":1,"template":`+tmpl()+`}}`)
	if err := k.SetScale(o, 5); err != nil {
		t.Fatal(err)
	}
	if sets, err := k.PodSets(o); err != nil || sets[0].Count != 5 {
		t.Fatalf("sets %v, err %v", sets, err)
	}
	if err := builtin(t, "Job").SetScale(o, 5); err == nil {
		t.Fatal("a Job has no scale path, yet SetScale wrote one")
	}
}

func TestNewKindsRefusesBuiltinTemplates(t *testing.T) {
	_, err := NewKinds([]Kind{{Group: "apps", Version: "v1", Kind: "Deployment", Templates: []Template{{Path: MustPath("spec.x")}}}})
	if err == nil || !strings.Contains(err.Error(), "built in") {
		t.Fatalf("err = %v", err)
	}
	ks, err := NewKinds([]Kind{{Group: "apps", Version: "v1", Kind: "Deployment", PodCreator: Identity{Username: "u"}}})
	if err != nil || ks.Lookup("apps", "v1", "Deployment").PodCreator.Username != "u" {
		t.Fatalf("podCreator of a built-in kind not set: %v", err)
	}
	if Builtins()[0].PodCreator.Username == "u" {
		t.Fatal("NewKinds changed the built-in list")
	}
	_, err = NewKinds([]Kind{{Group: "x", Version: "v1", Kind: "X", Templates: []Template{{Path: MustPath("spec.a[*].t"),
		Replicas: []Factor{{Path: MustPath("spec.b[*].n")}}}}}})
	if err == nil || !strings.Contains(err.Error(), "not over the template path's list") {
		t.Fatalf("err = %v", err)
	}
}
