package top

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

func TestPercent(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	tests := []struct {
		charged int64
		limit   *int64
		want    *int64
		load    int64
	}{
		{charged: 5, limit: nil, want: nil, load: -1},
		{charged: 0, limit: p(0), want: nil, load: 0},
		{charged: 1, limit: p(0), want: nil, load: math.MaxInt64},
		{charged: 0, limit: p(10), want: p(0), load: 0},
		{charged: 20480, limit: p(24576), want: p(83), load: 83}, // rounded down
		{charged: 3, limit: p(3), want: p(100), load: 100},
		{charged: math.MaxInt64, limit: p(1), want: p(math.MaxInt64), load: math.MaxInt64},
		{charged: math.MaxInt64, limit: p(math.MaxInt64), want: p(100), load: 100},
	}
	for _, tt := range tests {
		got := percent(tt.charged, tt.limit)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("percent(%d, %v) = %v, want %v", tt.charged, tt.limit, got, tt.want)
		}
		if l := loadOf(tt.charged, tt.limit); l != tt.load {
			t.Errorf("loadOf(%d, %v) = %d, want %d", tt.charged, tt.limit, l, tt.load)
		}
	}
}

// TestTopFamilies: every family of a namespace has its row, its
// reservations in its cells and its limits (a what-if's too) checked.
func TestTopFamilies(t *testing.T) {
	objs, err := manifest.ReadFile("-", strings.NewReader(fixtures.FamiliesState))
	if err != nil {
		t.Fatal(err)
	}
	l := source.LedgerOf(objs, source.Charging{Families: fixtures.TwoFamilies()}, logr.Discard())
	reserved := map[string][]reservation.Reservation{"team-b": {{UID: "u1", Name: "admitted", Demand: effective.UsageOf(fixtures.Ascend, effective.Vector{GPU: 2})}}}
	ws, err := parseWhatIfs([]string{"team-a=huawei.com/Ascend910B2=2"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := topReport(l.Snapshot(reserved), l.Charges, fixtures.TwoFamilies(), ws, "", sortName)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot's limits are the ledger's, shared: the what-if replaced
	// a copy of them.
	if lim := l.Namespace("team-a", nil).Limits[fixtures.Ascend].GPU; lim == nil || lim.Value != 4 {
		t.Errorf("the what-if changed the ledger's limit: %+v, want 4", lim)
	}
	var table bytes.Buffer
	if err := printTop(&table, out, false); err != nil {
		t.Fatal(err)
	}
	wantTable := `NAMESPACE   FAMILY         PODS   GPU     GPU%   GPUMEM(MiB)   GPUMEM%   GPUCORES   GPUCORES%   OVER
team-a      nvidia         1      1/2     50%    1024/8192     12%       0/-        -           -
team-a      ascend-910B2   1      3/2     150%   8192/16384    50%       0/-        -           huawei.com/Ascend910B2(what-if)
team-b      ascend-910B2   0      0+2/1   200%   0/-           -         0/-        -           huawei.com/Ascend910B2

NAMESPACE   FAMILY         KIND   NAME    NODE   STATE   GPU   GPUMEM(MiB)   GPUCORES
team-a      nvidia         Pod    mixed   -      full    1     1024          0
team-a      ascend-910B2   Pod    mixed   -      full    3     8192          0

what-if: namespace team-a, huawei.com/Ascend910B2: limit 2 instead of 4
`
	if table.String() != wantTable {
		t.Errorf("table\n%s\nwant\n%s", table.String(), wantTable)
	}
	want := `{"namespaces":{"team-a":{"pods":1,"used":{"gpu":1,"gpumem":1024,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":2,"gpumem":8192},"percent":{"gpu":50,"gpumem":12},` +
		`"families":{"ascend-910B2":{"used":{"gpu":3,"gpumem":8192,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},` +
		`"limits":{"gpu":2,"gpumem":16384},"percent":{"gpu":150,"gpumem":50}}},"quotas":["q-both","q-npu","q-nv"],` +
		`"over":[{"family":"ascend-910B2","resource":"huawei.com/Ascend910B2","used":3,"reserved":0,"charged":3,"limit":2,"key":"limits.huawei.com/Ascend910B2","whatIf":true}],` +
		`"charges":[{"kind":"Pod","name":"mixed","state":"full","user":"system:serviceaccount:team-a:default","used":{"gpu":1,"gpumem":1024,"gpucores":0},"families":{"ascend-910B2":{"gpu":3,"gpumem":8192,"gpucores":0}}}]},` +
		`"team-b":{"pods":0,"used":{"gpu":0,"gpumem":0,"gpucores":0},"reserved":{"gpu":0,"gpumem":0,"gpucores":0},"limits":{},"percent":{},` +
		`"families":{"ascend-910B2":{"used":{"gpu":0,"gpumem":0,"gpucores":0},"reserved":{"gpu":2,"gpumem":0,"gpucores":0},"limits":{"gpu":1},"percent":{"gpu":200}}},` +
		`"quotas":["npus"],"over":[{"family":"ascend-910B2","resource":"huawei.com/Ascend910B2","used":0,"reserved":2,"charged":2,"limit":1,"quota":"npus","key":"limits.huawei.com/Ascend910B2"}],` +
		`"charges":[]}},"overNamespaces":["team-a","team-b"],"whatIf":[{"namespace":"team-a","resource":"huawei.com/Ascend910B2","limit":2,"actual":4}]}`
	if got := fixtures.Compact(t, out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
