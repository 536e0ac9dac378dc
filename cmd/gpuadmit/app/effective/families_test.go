package effective

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestEffectiveFamilies: the nvidia family stays at the first level, every
// container listed (as before families); the other family is under
// families with only the containers naming it, each with its family.
func TestEffectiveFamilies(t *testing.T) {
	nvidiaOnly := `{"effective":{"gpu":1,"gpumem":1024,"gpucores":0},"containers":[` +
		`{"name":"app","role":"app","gpu":1,"gpumem":1024,"gpucores":0},{"name":"npu","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[]`
	ascendPart := `"families":{"ascend-910B2":{"effective":{"gpu":3,"gpumem":8192,"gpucores":0},"containers":[` +
		`{"name":"app","role":"app","family":"ascend-910B2","gpu":1,"gpumem":4096,"gpucores":0},` +
		`{"name":"npu","role":"app","family":"ascend-910B2","gpu":2,"gpumem":4096,"gpucores":0}],"unresolved":[]}}`
	tests := []struct {
		name string
		pod  string
		fams []effective.Family
		want string
	}{
		{name: "both families", pod: fixtures.MixedPod, fams: fixtures.TwoFamilies(), want: nvidiaOnly + "," + ascendPart + "}"},
		{name: "nvidia alone configured: the NPUs are not read", pod: fixtures.MixedPod, fams: []effective.Family{effective.Nvidia()}, want: nvidiaOnly + "}"},
		{name: "no nvidia request: zeros and every container at the first level",
			pod:  "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {huawei.com/Ascend910B2: 1, huawei.com/Ascend910B2-memory: 1024}}}]}\n",
			fams: fixtures.TwoFamilies(),
			want: `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],` +
				`"families":{"ascend-910B2":{"effective":{"gpu":1,"gpumem":1024,"gpucores":0},"containers":[{"name":"c","role":"app","family":"ascend-910B2","gpu":1,"gpumem":1024,"gpucores":0}],"unresolved":[]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := effectiveOf(fixtures.OneWorkload(t, tt.pod), tt.fams, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := fixtures.Compact(t, out); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestEffectiveReportFamilies renders hand-built demands: an unresolved
// container of another family is named with its family; a family the pod
// does not ask for is absent.
func TestEffectiveReportFamilies(t *testing.T) {
	ds := effective.Demands{
		{Family: "nvidia", Effective: effective.Vector{GPU: 1, MemMiB: 1024},
			Containers: []effective.Container{{Name: "app", Role: effective.RoleApp, Managed: true, Total: effective.Vector{GPU: 1, MemMiB: 1024}},
				{Name: "npu", Role: effective.RoleApp}}},
		{Family: fixtures.Ascend, Effective: effective.Vector{GPU: 2}, Unresolved: []string{"npu"},
			Containers: []effective.Container{{Name: "app", Role: effective.RoleApp},
				{Name: "npu", Role: effective.RoleApp, Managed: true, MemPercent: 100, Unresolved: true, Total: effective.Vector{GPU: 2}}}},
	}
	want := `{"effective":{"gpu":1,"gpumem":1024,"gpucores":0},"containers":[` +
		`{"name":"app","role":"app","gpu":1,"gpumem":1024,"gpucores":0},{"name":"npu","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],` +
		`"families":{"ascend-910B2":{"effective":{"gpu":2,"gpumem":0,"gpucores":0},"containers":[` +
		`{"name":"npu","role":"app","family":"ascend-910B2","gpu":2,"gpumem":0,"gpucores":0}],` +
		`"unresolved":["container \"npu\": memory is 100% of a device of family ascend-910B2 whose size is unknown; its gpumem is not counted"]}}}`
	if got := fixtures.Compact(t, effectiveReport(ds, "nvidia")); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Without the nvidia demand, the first level is zero and lists nothing.
	_, families, _ := strings.Cut(want, `"families"`)
	want = `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[],"unresolved":[],"families"` + families
	if got := fixtures.Compact(t, effectiveReport(ds[1:], "nvidia")); got != want {
		t.Errorf("without nvidia: got\n%s\nwant\n%s", got, want)
	}
}

// TestEffectiveFamiliesTable: a row per family the pod asks for, the
// first family's containers and the other's apart.
func TestEffectiveFamiliesTable(t *testing.T) {
	o, err := effectiveOf(fixtures.OneWorkload(t, fixtures.MixedPod), fixtures.TwoFamilies(), 0)
	if err != nil {
		t.Fatal(err)
	}
	out := effectiveObjects{primary: "nvidia", Objects: []effectiveObject{
		{ObjectRef: ObjectRef{Kind: "Pod", Namespace: "team-a", Name: "mixed", Replicas: 1}, effectiveOutput: o},
		{ObjectRef: ObjectRef{Kind: "DaemonSet", Name: "agent", Replicas: -1}, effectiveOutput: effectiveOutput{familyEffective: familyEffective{}}},
	}}
	var table bytes.Buffer
	if err := printEffective(&table, out, true); err != nil {
		t.Fatal(err)
	}
	want := `KIND        NAMESPACE   NAME    REPLICAS   FAMILY         GPU   GPUMEM(MiB)   GPUCORES   CONTAINERS
Pod         team-a      mixed   1          nvidia         1     1024          0          app:app,npu:app
Pod         team-a      mixed   1          ascend-910B2   3     8192          0          app:app,npu:app
DaemonSet   -           agent   per-node   nvidia         0     0             0          -
`
	if table.String() != want {
		t.Errorf("table\n%s\nwant\n%s", table.String(), want)
	}
}
