package workload

import (
	"errors"
	"testing"
)

// TestFactorBounds attacks a count's atLeast and atMost: a worker group
// of replicas 0 and minReplicas 4 runs 4 pods (never counted as 0); the
// upper bound applies after the lower one (maxReplicas wins when below
// minReplicas, as KubeRay counts); a lower bound that is no count refuses
// the workload rather than being dropped; an upper bound that is no count
// leaves the higher count.
func TestFactorBounds(t *testing.T) {
	k := Kind{Group: "ray.io", Version: "v1", Kind: "RayCluster", Templates: []Template{{Path: MustPath("spec.groups[*].template"),
		Replicas: []Factor{{Path: MustPath("spec.groups[*].replicas"), AtLeast: MustPath("spec.groups[*].minReplicas"),
			AtMost: MustPath("spec.groups[*].maxReplicas")}, {Path: MustPath("spec.groups[*].numOfHosts"), Default: 1}}}}}
	for _, tt := range []struct {
		name, group string
		want        int64
		refused     bool
	}{
		{name: "replicas 0, minReplicas 4", group: `"replicas":0,"minReplicas":4,"maxReplicas":4`, want: 4},
		{name: "replicas absent, minReplicas 3, 2 hosts", group: `"minReplicas":3,"numOfHosts":2`, want: 6},
		{name: "replicas over maxReplicas", group: `"replicas":9,"minReplicas":1,"maxReplicas":5`, want: 5},
		{name: "maxReplicas below minReplicas wins", group: `"replicas":0,"minReplicas":8,"maxReplicas":2`, want: 2},
		{name: "within the bounds", group: `"replicas":3,"minReplicas":1,"maxReplicas":5`, want: 3},
		{name: "no bounds", group: `"replicas":7`, want: 7},
		{name: "a negative minReplicas is refused", group: `"replicas":1,"minReplicas":-1`, refused: true},
		{name: "a string minReplicas is refused", group: `"replicas":0,"minReplicas":"4"`, refused: true},
		{name: "a fractional minReplicas is refused", group: `"replicas":0,"minReplicas":2.5`, refused: true},
		{name: "a string maxReplicas keeps the higher count", group: `"replicas":6,"maxReplicas":"2"`, want: 6},
		{name: "a negative maxReplicas keeps the higher count", group: `"replicas":6,"maxReplicas":-2`, want: 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sets, err := k.PodSets(obj(t, `{"spec":{"groups":[{`+tt.group+`,"template":`+tmpl()+`}]}}`))
			var ce *CountError
			switch {
			case tt.refused:
				if !errors.As(err, &ce) {
					t.Fatalf("%d sets, err %v: want a CountError", len(sets), err)
				}
			case err != nil:
				t.Fatal(err)
			case len(sets) != 1 || sets[0].Count != tt.want:
				t.Fatalf("%d sets (first of %d pods), want one of %d pods", len(sets), sets[0].Count, tt.want)
			}
		})
	}
}

// TestFactorBoundsAligned: a bound whose [*] is not over its template's
// list is refused when the kind is validated.
func TestFactorBoundsAligned(t *testing.T) {
	for _, f := range []Factor{{Path: MustPath("spec.groups[*].replicas"), AtLeast: MustPath("spec.other[*].min")},
		{Path: MustPath("spec.groups[*].replicas"), AtMost: MustPath("spec.groups[*].x[*].max")}} {
		k := Kind{Group: "x", Version: "v1", Kind: "X", Templates: []Template{{Path: MustPath("spec.groups[*].template"), Replicas: []Factor{f}}}}
		if err := k.Validate(); err == nil {
			t.Errorf("bounds %q/%q accepted", f.AtLeast, f.AtMost)
		}
	}
}
