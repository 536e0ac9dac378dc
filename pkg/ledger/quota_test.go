package ledger

import (
	"strconv"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestQuotaLimits(t *testing.T) {
	type want struct {
		gpu, mem, cores string // "" absent, else "value/quota" or "invalid/quota"
		problems        int
		native          int
	}
	show := func(l *Limit) string {
		switch {
		case l == nil:
			return ""
		case l.Invalid:
			return "invalid/" + l.Quota
		}
		return strconv.FormatInt(l.Value, 10) + "/" + l.Quota
	}
	tests := []struct {
		name   string
		factor int64
		quotas map[string]map[string]string
		delete []string
		want   want
	}{
		{name: "memory in MiB", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "24576"}},
			want: want{mem: "24576/q"}},
		{name: "memory units times memoryFactor, once", factor: 1024,
			quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "24"}}, want: want{mem: "24576/q"}},
		{name: "count and cores", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpucores": "200"}},
			want: want{gpu: "4/q", cores: "200/q"}},
		{name: "several quotas: the tightest wins per dimension",
			quotas: map[string]map[string]string{
				"a": {"limits.nvidia.com/gpumem": "40000", "limits.nvidia.com/gpu": "2"},
				"b": {"limits.nvidia.com/gpumem": "24576", "limits.nvidia.com/gpu": "8"}},
			want: want{gpu: "2/a", mem: "24576/b"}},
		{name: "deleting one quota leaves the others",
			quotas: map[string]map[string]string{
				"a": {"limits.nvidia.com/gpumem": "40000"},
				"b": {"limits.nvidia.com/gpumem": "24576"}},
			delete: []string{"b"}, want: want{mem: "40000/a"}},
		{name: "explicit zero blocks", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpu": "0"}},
			want: want{gpu: "0/q"}},
		{name: "fractional value: reported, rounded down, never unlimited",
			quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpu": "1.5"}}, want: want{gpu: "1/q", problems: 1}},
		{name: "milli value: reported, rounded down", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "500m"}},
			want: want{mem: "0/q", problems: 1}},
		{name: "negative value: reported and blocking", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpu": "-1"}},
			want: want{gpu: "invalid/q", problems: 1}},
		{name: "memory in bytes: MiB rounded down, reported", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "24Gi"}},
			want: want{mem: "24576/q", problems: 1}},
		{name: "memory in decimal bytes (8G): MiB rounded down, reported", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "8G"}},
			want: want{mem: "7629/q", problems: 1}},
		{name: "memory in bytes, exponent (1e9): MiB, reported", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "1e9"}},
			want: want{mem: "953/q", problems: 1}},
		{name: "memory in bytes is MiB whatever memoryFactor", factor: 1024,
			quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "24Gi"}}, want: want{mem: "24576/q", problems: 1}},
		{name: "a plain memory number under 10^9 stays memory units (24000, stored as 24k)",
			quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "24k"}}, want: want{mem: "24000/q"}},
		{name: "a byte suffix on the count is a number", quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpu": "1Ki"}},
			want: want{gpu: "1024/q"}},
		{name: "beyond int64 after memoryFactor: reported and blocking", factor: 1 << 20,
			quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "100P"}}, want: want{mem: "95367431640/q", problems: 1}},
		{name: "beyond int64 after memoryFactor, under 10^9: reported and blocking", factor: 1 << 40,
			quotas: map[string]map[string]string{"q": {"limits.nvidia.com/gpumem": "100M"}}, want: want{mem: "invalid/q", problems: 1}},
		{name: "an invalid quota beside a valid one still blocks",
			quotas: map[string]map[string]string{"a": {"limits.nvidia.com/gpu": "4"}, "b": {"limits.nvidia.com/gpu": "-2"}},
			want:   want{gpu: "invalid/b", problems: 1}},
		{name: "native requests quota is recorded, not a limit",
			quotas: map[string]map[string]string{"q": {"requests.nvidia.com/gpu": "4", "requests.nvidia.com/gpumem": "1000"}},
			want:   want{native: 2}},
		{name: "unrelated keys are ignored",
			quotas: map[string]map[string]string{"q": {"limits.cpu": "4", "requests.memory": "1Gi", "nvidia.com/gpu": "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := effective.Nvidia()
			s.MemoryFactor = tt.factor
			l := New(Options{Families: []effective.Family{s}})
			for name, hard := range tt.quotas {
				l.UpsertQuota(testquota.New("ns", name, hard))
			}
			for _, name := range tt.delete {
				l.DeleteQuota("ns", name)
			}
			ns := l.Namespace("ns", nil)
			lim := ns.Limits[nvidia]
			got := want{gpu: show(lim.GPU), mem: show(lim.MemMiB), cores: show(lim.Cores),
				problems: len(ns.Problems), native: len(ns.NativeRequestQuotas)}
			if got != tt.want {
				t.Errorf("got %+v, want %+v (problems %v)", got, tt.want, ns.Problems)
			}
			for _, p := range ns.Problems {
				if p.Kind != ProblemQuota || p.Key == "" || p.Value == "" || p.Name == "" {
					t.Errorf("problem %+v must name the quota, the key and the value", p)
				}
			}
		})
	}
}

func TestQuotaUpdateAndDelete(t *testing.T) {
	l := newLedger(t)
	l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": "1000"}))
	l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": "2000"}))
	if got := l.Namespace("ns", nil).Limits[nvidia].MemMiB; got == nil || got.Value != 2000 {
		t.Fatalf("after update: %+v, want 2000", got)
	}
	l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.cpu": "1"}))
	if got := l.Namespace("ns", nil).Limits; got != nil {
		t.Fatalf("after removing the key: %+v, want no limit", got)
	}
	l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": "1000"}))
	l.DeleteQuota("ns", "q")
	l.DeleteQuota("ns", "q") // twice: harmless
	if got := l.Namespace("ns", nil).Limits; got != nil {
		t.Fatalf("after delete: %+v, want none", got)
	}
	if st := l.Snapshot(nil).Stats; st.Namespaces != 0 {
		t.Errorf("an empty namespace must be forgotten, stats %+v", st)
	}
}
