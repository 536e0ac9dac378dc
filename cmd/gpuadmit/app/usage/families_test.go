package usage

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// TestUsageFamilies: the nvidia family's usage and limits stay at the first
// level; the other family's are under families, with the quotas limiting
// it; a quota limiting the other family alone is not at the first level.
func TestUsageFamilies(t *testing.T) {
	objs, err := manifest.ReadFile("-", strings.NewReader(fixtures.FamiliesState))
	if err != nil {
		t.Fatal(err)
	}
	out := usageReport(source.LedgerOf(objs, source.Charging{Families: fixtures.TwoFamilies()}, logr.Discard()).Snapshot(nil), "", "nvidia")
	want := `{"namespaces":{` +
		`"team-a":{"used":{"gpu":1,"gpumem":1024,"gpucores":0},"limits":{"gpu":2,"gpumem":8192},"pods":1,` +
		`"quotas":{"q-both":{"gpu":2},"q-nv":{"gpumem":8192}},` +
		`"families":{"ascend-910B2":{"used":{"gpu":3,"gpumem":8192,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":4,"gpumem":16384},"quotas":{"q-both":{"gpu":8},"q-npu":{"gpu":4,"gpumem":16384}}}}},` +
		`"team-b":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"pods":0,` +
		`"families":{"ascend-910B2":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":1},"quotas":{"npus":{"gpu":1}}}}}},"nodes":{}}`
	if got := fixtures.Compact(t, out); got != want {
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

	// With nvidia alone configured the NPUs are not read, and their quota
	// keys are reported: nothing enforces them.
	out = usageReport(source.LedgerOf(objs, source.Charging{Families: []effective.Family{effective.Nvidia()}}, logr.Discard()).Snapshot(nil), "team-a", "nvidia")
	ungoverned := func(q, key, v string) string {
		return `"ungoverned team-a/` + q + `: ` + key + ` \"` + v + `\": a resource of the ascend-910B2 device family, which gpuadmit does not govern` +
			` (no vnpus section in its configuration, or its section switched off: devices.ascend.enabled, devices.iluvatar.enabled): not enforced by gpuadmit (nor by Kubernetes, which limits only requests. of an extended resource)"`
	}
	want = `{"namespaces":{"team-a":{"used":{"gpu":1,"gpumem":1024,"gpucores":0},"limits":{"gpu":2,"gpumem":8192},"pods":1,` +
		`"quotas":{"q-both":{"gpu":2},"q-npu":{},"q-nv":{"gpumem":8192}}}},"nodes":{},"problems":[` +
		ungoverned("q-both", "limits.huawei.com/Ascend910B2", "8") + "," + ungoverned("q-npu", "limits.huawei.com/Ascend910B2", "4") + "," +
		ungoverned("q-npu", "limits.huawei.com/Ascend910B2-memory", "16384") + `]}`
	if got := fixtures.Compact(t, out); got != want {
		t.Errorf("nvidia alone: got\n%s\nwant\n%s", got, want)
	}
}
