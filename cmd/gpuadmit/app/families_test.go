package app

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// The configuration governs the nvidia family alone for now, so these tests
// hand the rendering a second family, an Ascend 910B2 read by HAMi's share
// rule (a count and memory, no percentage, no cores).

const ascend = "ascend-910B2"

func ascendFamily() effective.Family {
	return effective.Family{
		Name:          ascend,
		Names:         effective.ResourceNames{Count: "huawei.com/Ascend910B2", Memory: "huawei.com/Ascend910B2-memory"},
		NoPercentage:  true,
		NoCores:       true,
		DefaultGPUNum: 1,
		MemoryFactor:  1,
	}
}

func twoFamilies() []effective.Family { return []effective.Family{effective.Nvidia(), ascendFamily()} }

// mixedPod: container app asks for one GPU with 1024 MiB and one NPU with
// 4096 MiB, container npu for two NPUs with 2048 MiB each.
const mixedPod = `apiVersion: v1
kind: Pod
metadata: {name: mixed, namespace: team-a}
spec:
  containers:
  - name: app
    resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024, huawei.com/Ascend910B2: 1, huawei.com/Ascend910B2-memory: 4096}}
  - name: npu
    resources: {limits: {huawei.com/Ascend910B2: 2, huawei.com/Ascend910B2-memory: 2048}}
`

// compact marshals v as the command writes it, without the indentation.
func compact(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	if err := writeJSON(&buf, v); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// oneWorkload reads the single workload of a manifest.
func oneWorkload(t *testing.T, doc string) *manifest.Workload {
	t.Helper()
	objs, err := manifest.ReadFile("-", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Workloads) != 1 {
		t.Fatalf("%d workloads, want 1", len(objs.Workloads))
	}
	return objs.Workloads[0]
}

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
		{name: "both families", pod: mixedPod, fams: twoFamilies(), want: nvidiaOnly + "," + ascendPart + "}"},
		{name: "nvidia alone configured: the NPUs are not read", pod: mixedPod, fams: []effective.Family{effective.Nvidia()}, want: nvidiaOnly + "}"},
		{name: "no nvidia request: zeros and every container at the first level",
			pod:  "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {huawei.com/Ascend910B2: 1, huawei.com/Ascend910B2-memory: 1024}}}]}\n",
			fams: twoFamilies(),
			want: `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],` +
				`"families":{"ascend-910B2":{"effective":{"gpu":1,"gpumem":1024,"gpucores":0},"containers":[{"name":"c","role":"app","family":"ascend-910B2","gpu":1,"gpumem":1024,"gpucores":0}],"unresolved":[]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := effectiveOf(oneWorkload(t, tt.pod), tt.fams, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := compact(t, out); got != tt.want {
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
		{Family: ascend, Effective: effective.Vector{GPU: 2}, Unresolved: []string{"npu"},
			Containers: []effective.Container{{Name: "app", Role: effective.RoleApp},
				{Name: "npu", Role: effective.RoleApp, Managed: true, MemPercent: 100, Unresolved: true, Total: effective.Vector{GPU: 2}}}},
	}
	want := `{"effective":{"gpu":1,"gpumem":1024,"gpucores":0},"containers":[` +
		`{"name":"app","role":"app","gpu":1,"gpumem":1024,"gpucores":0},{"name":"npu","role":"app","gpu":0,"gpumem":0,"gpucores":0}],"unresolved":[],` +
		`"families":{"ascend-910B2":{"effective":{"gpu":2,"gpumem":0,"gpucores":0},"containers":[` +
		`{"name":"npu","role":"app","family":"ascend-910B2","gpu":2,"gpumem":0,"gpucores":0}],` +
		`"unresolved":["container \"npu\": memory is 100% of a device of family ascend-910B2 whose size is unknown; its gpumem is not counted"]}}}`
	if got := compact(t, effectiveReport(ds, "nvidia")); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Without the nvidia demand, the first level is zero and lists nothing.
	_, families, _ := strings.Cut(want, `"families"`)
	want = `{"effective":{"gpu":0,"gpumem":0,"gpucores":0},"containers":[],"unresolved":[],"families"` + families
	if got := compact(t, effectiveReport(ds[1:], "nvidia")); got != want {
		t.Errorf("without nvidia: got\n%s\nwant\n%s", got, want)
	}
}

// familiesState: team-a runs the mixed pod; one quota limits nvidia's
// memory, another the NPUs, a third both; team-b only limits NPUs.
const familiesState = mixedPod + `---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q-nv, namespace: team-a}
spec: {hard: {limits.nvidia.com/gpumem: "8192"}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q-npu, namespace: team-a}
spec: {hard: {limits.huawei.com/Ascend910B2: "4", limits.huawei.com/Ascend910B2-memory: "16384"}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q-both, namespace: team-a}
spec: {hard: {limits.nvidia.com/gpu: "2", limits.huawei.com/Ascend910B2: "8"}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: npus, namespace: team-b}
spec: {hard: {limits.huawei.com/Ascend910B2: "1"}}
`

// TestUsageFamilies: the nvidia family's usage and limits stay at the first
// level; the other family's are under families, with the quotas limiting
// it; a quota limiting the other family alone is not at the first level.
func TestUsageFamilies(t *testing.T) {
	objs, err := manifest.ReadFile("-", strings.NewReader(familiesState))
	if err != nil {
		t.Fatal(err)
	}
	out := usageReport(ledgerOf(objs, charging{families: twoFamilies()}, logr.Discard()).Snapshot(nil), "", "nvidia")
	want := `{"namespaces":{` +
		`"team-a":{"used":{"gpu":1,"gpumem":1024,"gpucores":0},"limits":{"gpu":2,"gpumem":8192},"pods":1,` +
		`"quotas":{"q-both":{"gpu":2},"q-nv":{"gpumem":8192}},` +
		`"families":{"ascend-910B2":{"used":{"gpu":3,"gpumem":8192,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":4,"gpumem":16384},"quotas":{"q-both":{"gpu":8},"q-npu":{"gpu":4,"gpumem":16384}}}}},` +
		`"team-b":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"pods":0,` +
		`"families":{"ascend-910B2":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":1},"quotas":{"npus":{"gpu":1}}}}}},"nodes":{}}`
	if got := compact(t, out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	var table bytes.Buffer
	if err := printUsage(&table, out, false); err != nil {
		t.Fatal(err)
	}
	wantTable := `NAMESPACE   FAMILY         PODS   GPU   GPUMEM(MiB)   GPUCORES
team-a      nvidia         1      1/2   1024/8192     0/-
team-a      ascend-910B2   1      3/4   8192/16384    0/-
team-b      ascend-910B2   0      0/1   0/-           0/-
`
	if table.String() != wantTable {
		t.Errorf("table\n%s\nwant\n%s", table.String(), wantTable)
	}
	table.Reset()
	if err := printUsage(&table, out, true); err != nil {
		t.Fatal(err)
	}
	wantWide := `NAMESPACE   FAMILY         PODS   GPU   GPUMEM(MiB)   GPUCORES   QUOTAS         UNRESOLVED
team-a      nvidia         1      1/2   1024/8192     0/-        q-both,q-nv    0
team-a      ascend-910B2   1      3/4   8192/16384    0/-        q-both,q-npu   -
team-b      ascend-910B2   0      0/1   0/-           0/-        npus           -
`
	if table.String() != wantWide {
		t.Errorf("wide\n%s\nwant\n%s", table.String(), wantWide)
	}

	// With nvidia alone configured the NPUs are not read: the output is
	// what it was before families.
	out = usageReport(ledgerOf(objs, charging{families: []effective.Family{effective.Nvidia()}}, logr.Discard()).Snapshot(nil), "team-a", "nvidia")
	want = `{"namespaces":{"team-a":{"used":{"gpu":1,"gpumem":1024,"gpucores":0},"limits":{"gpu":2,"gpumem":8192},"pods":1,` +
		`"quotas":{"q-both":{"gpu":2},"q-nv":{"gpumem":8192}}}},"nodes":{}}`
	if got := compact(t, out); got != want {
		t.Errorf("nvidia alone: got\n%s\nwant\n%s", got, want)
	}
}

// TestEvalFamilies: eval's first-level effective is nvidia's, the other
// family's demand is under families; the table has a row per family.
func TestEvalFamilies(t *testing.T) {
	u := effective.Usage{"nvidia": {GPU: 1, MemMiB: 1024}, ascend: {GPU: 3, MemMiB: 8192}}
	o := evalOutput{Allowed: true, Denials: []string{}, Warnings: []string{}}
	o.Effective, o.Families = evalEffective(u, "nvidia")
	want := `{"allowed":true,"effective":{"gpu":1,"gpumem":1024,"gpucores":0},"denials":[],"warnings":[],` +
		`"families":{"ascend-910B2":{"effective":{"gpu":3,"gpumem":8192,"gpucores":0}}}}`
	if got := compact(t, o); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	nv := evalOutput{Allowed: true, Denials: []string{}, Warnings: []string{}}
	nv.Effective, nv.Families = evalEffective(effective.UsageOf("nvidia", effective.Vector{GPU: 1}), "nvidia")
	if got, want := compact(t, nv), `{"allowed":true,"effective":{"gpu":1,"gpumem":0,"gpucores":0},"denials":[],"warnings":[]}`; got != want {
		t.Errorf("nvidia alone: got %s, want %s", got, want)
	}

	npuOnly := evalOutput{Allowed: false, Denials: []string{"too many NPUs"}, Warnings: []string{}}
	npuOnly.Effective, npuOnly.Families = evalEffective(effective.UsageOf(ascend, effective.Vector{GPU: 9}), "nvidia")
	objs := evalObjects{primary: "nvidia", Objects: []evalObject{
		{objectRef: objectRef{Kind: "Pod", Name: "mixed", Replicas: 1}, Admitted: 1, evalOutput: o, evaluatedIn: "team-a"},
		{objectRef: objectRef{Kind: "Pod", Name: "npus", Replicas: 1}, evalOutput: npuOnly, evaluatedIn: "team-a"},
	}}
	var table bytes.Buffer
	if err := printEval(&table, objs, false); err != nil {
		t.Fatal(err)
	}
	wantTable := `KIND   NAMESPACE   NAME    ALLOWED   ADMITTED   FAMILY         GPU   GPUMEM(MiB)   GPUCORES
Pod    team-a      mixed   true      1/1        nvidia         1     1024          0
Pod    team-a      mixed   true      1/1        ascend-910B2   3     8192          0
Pod    team-a      npus    false     0/1        ascend-910B2   9     0             0

Pod team-a/npus denied: too many NPUs
`
	if table.String() != wantTable {
		t.Errorf("table\n%s\nwant\n%s", table.String(), wantTable)
	}
	table.Reset()
	if err := printEval(&table, objs, true); err != nil {
		t.Fatal(err)
	}
	if want := "Pod    team-a      npus    false     0/1        ascend-910B2   9     0             0          1         0\n"; !strings.Contains(table.String(), want) {
		t.Errorf("wide\n%s\nwant the row\n%s", table.String(), want)
	}
}

// TestEffectiveFamiliesTable: a row per family the pod asks for, the
// first family's containers and the other's apart.
func TestEffectiveFamiliesTable(t *testing.T) {
	o, err := effectiveOf(oneWorkload(t, mixedPod), twoFamilies(), 0)
	if err != nil {
		t.Fatal(err)
	}
	out := effectiveObjects{primary: "nvidia", Objects: []effectiveObject{
		{objectRef: objectRef{Kind: "Pod", Namespace: "team-a", Name: "mixed", Replicas: 1}, effectiveOutput: o},
		{objectRef: objectRef{Kind: "DaemonSet", Name: "agent", Replicas: -1}, effectiveOutput: effectiveOutput{familyEffective: familyEffective{}}},
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
