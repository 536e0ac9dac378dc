package eval

import (
	"bytes"
	"strings"
	"testing"

	effectivecmd "github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/effective"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestEvalFamilies: eval's first-level effective is nvidia's, the other
// family's demand is under families; the table has a row per family.
func TestEvalFamilies(t *testing.T) {
	u := effective.Usage{"nvidia": {GPU: 1, MemMiB: 1024}, fixtures.Ascend: {GPU: 3, MemMiB: 8192}}
	o := evalOutput{Allowed: true, Denials: []string{}, Warnings: []string{}}
	o.Effective, o.Families = evalEffective(u, "nvidia")
	want := `{"allowed":true,"effective":{"gpu":1,"gpumem":1024,"gpucores":0},"denials":[],"warnings":[],` +
		`"families":{"ascend-910B2":{"effective":{"gpu":3,"gpumem":8192,"gpucores":0}}}}`
	if got := fixtures.Compact(t, o); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	nv := evalOutput{Allowed: true, Denials: []string{}, Warnings: []string{}}
	nv.Effective, nv.Families = evalEffective(effective.UsageOf("nvidia", effective.Vector{GPU: 1}), "nvidia")
	if got, want := fixtures.Compact(t, nv), `{"allowed":true,"effective":{"gpu":1,"gpumem":0,"gpucores":0},"denials":[],"warnings":[]}`; got != want {
		t.Errorf("nvidia alone: got %s, want %s", got, want)
	}

	npuOnly := evalOutput{Allowed: false, Denials: []string{"too many NPUs"}, Warnings: []string{}}
	npuOnly.Effective, npuOnly.Families = evalEffective(effective.UsageOf(fixtures.Ascend, effective.Vector{GPU: 9}), "nvidia")
	objs := Objects{primary: "nvidia", Objects: []evalObject{
		{ObjectRef: effectivecmd.ObjectRef{Kind: "Pod", Name: "mixed", Replicas: 1}, Admitted: 1, evalOutput: o, evaluatedIn: "team-a"},
		{ObjectRef: effectivecmd.ObjectRef{Kind: "Pod", Name: "npus", Replicas: 1}, evalOutput: npuOnly, evaluatedIn: "team-a"},
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
