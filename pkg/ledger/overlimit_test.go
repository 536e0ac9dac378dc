package ledger

import (
	"math"
	"reflect"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestOverLimits(t *testing.T) {
	lim := func(v int64) *Limit { return &Limit{Value: v, Quota: "q", Key: "k"} }
	nv := effective.Nvidia()
	tests := []struct {
		name     string
		used     effective.Vector
		reserved effective.Vector
		limits   Limits
		want     []LimitUse
	}{
		{name: "no limit: never over", used: vec(8, 1<<20, 800)},
		{name: "at the limit exactly: not over", used: vec(2, 16384, 100), limits: Limits{GPU: lim(2), MemMiB: lim(16384), Cores: lim(100)}},
		{name: "memory lowered under use", used: vec(2, 16384, 0), limits: Limits{GPU: lim(4), MemMiB: lim(8192)},
			want: []LimitUse{{Family: "nvidia", Resource: "nvidia.com/gpumem", Dimension: effective.DimensionMemory, Used: 16384, Limit: 8192, Quota: "q", Key: "k", Unit: "MiB"}}},
		{name: "reservations count: admitted pods the watch has not recorded", used: vec(1, 4096, 0), reserved: vec(1, 4096, 0),
			limits: Limits{MemMiB: lim(8191)},
			want:   []LimitUse{{Family: "nvidia", Resource: "nvidia.com/gpumem", Dimension: effective.DimensionMemory, Used: 4096, Reserved: 4096, Limit: 8191, Quota: "q", Key: "k", Unit: "MiB"}}},
		{name: "every dimension over, in count, memory, cores order", used: vec(3, 3, 3), limits: Limits{GPU: lim(2), MemMiB: lim(2), Cores: lim(2)},
			want: []LimitUse{
				{Family: "nvidia", Resource: "nvidia.com/gpu", Used: 3, Limit: 2, Quota: "q", Key: "k"},
				{Family: "nvidia", Resource: "nvidia.com/gpumem", Dimension: effective.DimensionMemory, Used: 3, Limit: 2, Quota: "q", Key: "k", Unit: "MiB"},
				{Family: "nvidia", Resource: "nvidia.com/gpucores", Dimension: effective.DimensionCores, Used: 3, Limit: 2, Quota: "q", Key: "k"}}},
		{name: "an invalid limit blocks but is a problem, not an overage", used: vec(1, 0, 0),
			limits: Limits{GPU: &Limit{Value: 0, Quota: "q", Invalid: true}}},
		{name: "zero limit with use: over", used: vec(1, 0, 0), limits: Limits{GPU: lim(0)},
			want: []LimitUse{{Family: "nvidia", Resource: "nvidia.com/gpu", Used: 1, Limit: 0, Quota: "q", Key: "k"}}},
		{name: "hostile sums saturate instead of wrapping below the limit", used: vec(math.MaxInt64, 0, 0), reserved: vec(math.MaxInt64, 0, 0),
			limits: Limits{GPU: lim(math.MaxInt64 - 1)},
			want: []LimitUse{{Family: "nvidia", Resource: "nvidia.com/gpu", Used: math.MaxInt64, Reserved: math.MaxInt64,
				Limit: math.MaxInt64 - 1, Quota: "q", Key: "k"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := NamespaceSnapshot{Used: effective.UsageOf("nvidia", tt.used), Reserved: effective.UsageOf("nvidia", tt.reserved),
				Limits: map[string]Limits{"nvidia": tt.limits}}
			got := OverLimits(n, []effective.Family{nv})
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("OverLimits = %+v, want %+v", got, tt.want)
			}
			for _, o := range got {
				if o.Charged() <= o.Limit {
					t.Errorf("%s listed over with %d charged against %d", o.Resource, o.Charged(), o.Limit)
				}
			}
		})
	}
}

// TestOverLimitsLoweredQuota lowers a quota under the pods a ledger
// records: the namespace turns over, and raising it back clears it.
func TestOverLimitsLoweredQuota(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(seedPod().UID("p1").InitTerminated("convert-weights", 0).Build()) // steady: 1 GPU, 10240 MiB
	l.UpsertQuota(testquota.New("team-a", "gpu", map[string]string{"limits.nvidia.com/gpumem": "16384"}))
	fams := l.Families()
	if over := OverLimits(l.Namespace("team-a", nil), fams); len(over) != 0 {
		t.Fatalf("within its quota, listed over: %+v", over)
	}
	l.UpsertQuota(testquota.New("team-a", "gpu", map[string]string{"limits.nvidia.com/gpumem": "8192"}))
	over := OverLimits(l.Namespace("team-a", nil), fams)
	want := []LimitUse{{Family: "nvidia", Resource: "nvidia.com/gpumem", Dimension: effective.DimensionMemory, Used: 10240, Limit: 8192, Quota: "gpu", Key: "limits.nvidia.com/gpumem", Unit: "MiB"}}
	if !reflect.DeepEqual(over, want) {
		t.Fatalf("after lowering the quota: %+v, want %+v", over, want)
	}
	if got, msg := over[0].String(), "nvidia.com/gpumem: 10240 MiB charged (10240 used, 0 reserved), over the limit 8192 MiB of ResourceQuota gpu"; got != msg {
		t.Errorf("String() = %q, want %q", got, msg)
	}
	l.UpsertQuota(testquota.New("team-a", "gpu", map[string]string{"limits.nvidia.com/gpumem": "10240"}))
	if over := OverLimits(l.Namespace("team-a", nil), fams); len(over) != 0 {
		t.Fatalf("raised back to the usage, still over: %+v", over)
	}
}

// TestLimitUses: every limit is listed with its charge, over or not; an
// invalid value says the resource is blocked and is never over.
func TestLimitUses(t *testing.T) {
	n := NamespaceSnapshot{Used: effective.UsageOf("nvidia", vec(1, 4096, 30)),
		Limits: map[string]Limits{"nvidia": {GPU: &Limit{Value: 2, Quota: "a", Key: "limits.nvidia.com/gpu"},
			Cores: &Limit{Quota: "b", Key: "limits.nvidia.com/gpucores", Invalid: true}}}}
	uses := LimitUses(n, []effective.Family{effective.Nvidia()})
	want := []string{
		"nvidia.com/gpu: 1 charged (1 used, 0 reserved), within the limit 2 of ResourceQuota a",
		"nvidia.com/gpucores: the value of ResourceQuota b (limits.nvidia.com/gpucores) is unusable, so the resource is blocked",
	}
	if len(uses) != len(want) {
		t.Fatalf("LimitUses = %+v", uses)
	}
	for i, u := range uses {
		if u.String() != want[i] || u.Over() {
			t.Errorf("use %d: %q (over %v), want %q, not over", i, u.String(), u.Over(), want[i])
		}
	}
}
