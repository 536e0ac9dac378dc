package workload

import "testing"

// FuzzPodSets: whatever the paths and the object, reading pod sets never
// panics, and every count read is a whole number, never negative (an
// overflow or a negative count is an error, never a wrapped value).
func FuzzPodSets(f *testing.F) {
	f.Add("spec.jobs[*].template", "spec.jobs[*].replicas", "spec.n", int64(0),
		`{"spec":{"n":3,"jobs":[{"replicas":2,"template":{"spec":{"containers":[]}}},{"template":{"spec":{}}}]}}`)
	f.Add("spec.m[*].template", "spec.m[*].replicas", "spec.size", int64(-1),
		`{"spec":{"size":0,"m":{"A":{"replicas":-3,"template":{"spec":{}}},"B":{"replicas":9223372036854775807,"template":{"spec":{}}}}}}`)
	f.Add("spec.template", "spec.a", "spec.b", int64(5), `{"spec":{"a":1e300,"b":[1],"template":{"spec":{"containers":"x"}}}}`)
	f.Fuzz(func(t *testing.T, tmplPath, countPath, countPath2 string, offset int64, raw string) {
		tp, err1 := ParsePath(tmplPath)
		cp, err2 := ParsePath(countPath)
		cp2, err3 := ParsePath(countPath2)
		if err1 != nil || err2 != nil || err3 != nil {
			return
		}
		k := Kind{Group: "x", Version: "v1", Kind: "X", Templates: []Template{{Path: tp, Fallback: cp,
			Replicas: []Factor{{Path: cp, Default: 1}, {Path: cp2, Default: 2, Offset: offset}}}}}
		if k.Validate() != nil {
			k.Templates[0].Fallback = Path{}
			k.Templates[0].Replicas = nil
		}
		obj, err := Decode([]byte(raw))
		if err != nil {
			return
		}
		sets, err := k.PodSets(obj)
		if err != nil {
			return
		}
		for _, s := range sets {
			if s.Count < 0 || s.Pod == nil {
				t.Fatalf("pod set %q: count %d, pod %v", s.Name, s.Count, s.Pod)
			}
		}
	})
}
