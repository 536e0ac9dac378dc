package decision

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/util"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/policy"
)

// The second family of the multi-family tests: Huawei's Ascend 910B2 NPU as
// HAMi's ascend backend names it (no memory percentage resource). The
// configuration cannot name it yet (config.Families returns the nvidia
// family only), so these tests build their deciders with newDecider.
const (
	ascendName  = "ascend-910B2"
	ascendCount = corev1.ResourceName("huawei.com/Ascend910B2")
	ascendMem   = corev1.ResourceName("huawei.com/Ascend910B2-memory")
	ascendCores = corev1.ResourceName("huawei.com/Ascend910B2-core")
)

func ascendFamily() effective.Family {
	return effective.Family{
		Name:          ascendName,
		Names:         effective.ResourceNames{Count: ascendCount, Memory: ascendMem, Cores: ascendCores},
		DefaultGPUNum: 1,
		MemoryFactor:  1,
	}
}

// twoFamilies are the default configuration's families (nvidia) and the
// Ascend family after them.
func twoFamilies() []effective.Family {
	return append(config.Families(config.Default()), ascendFamily())
}

// npu is an Ascend request: n NPUs with memMiB each.
func npu(n, memMiB int64) []testpod.Opt {
	return []testpod.Opt{testpod.Res(ascendCount, fmt.Sprint(n)), testpod.Res(ascendMem, fmt.Sprint(memMiB))}
}

// capturing keeps the last input document it evaluated.
type capturing struct {
	Evaluator
	last ast.Value
}

func (c *capturing) Eval(ctx context.Context, in ast.Value) (policy.Output, error) {
	c.last = in
	return c.Evaluator.Eval(ctx, in)
}

func loadedEngine(t *testing.T) *policy.Engine {
	t.Helper()
	e := policy.New(policy.Options{})
	if err := e.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// twoFamilyDecider is a decider reading nvidia and Ascend requests, on a
// ledger that knows team-a, one 24 GiB nvidia node, a quota limiting
// nvidia memory to 24576 MiB and Ascend memory to 65536 MiB, and the
// running pods.
func twoFamilyDecider(t *testing.T, ev Evaluator, running ...*corev1.Pod) (*Decider, *ledger.Ledger) {
	t.Helper()
	fams := twoFamilies()
	l := ledger.New(ledger.Options{Families: fams, Log: logr.Discard()})
	testns.Known(l, "team-a")
	l.UpsertNode(testnode.WithGPUs("a10-1", nil, 24576))
	l.UpsertQuota(testquota.New("team-a", "q", map[string]string{
		"limits.nvidia.com/gpumem": "24576", "limits." + string(ascendMem): "65536",
	}))
	for _, p := range running {
		l.UpsertPod(p)
	}
	d, err := newDecider(ev, l, config.Default(), fams, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return d, l
}

// TestSecondFamilyLimits: a second family's limits deny and warn as the
// nvidia family's do, naming its resources; a pod asking for both
// families is denied once, for the family over its limit, and Exceeded
// names that family alone.
func TestSecondFamilyLimits(t *testing.T) {
	e := loadedEngine(t)
	nvidia := config.Families(config.Default())[0].Name
	usingNPU := func(memMiB int64) *corev1.Pod {
		return testpod.New("other").NS("team-a").App("c", npu(1, memMiB)...).Node("npu-1").AppRunning("c").Build()
	}
	usingGPU := func(memMiB int64) *corev1.Pod {
		return testpod.New("other-gpu").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(memMiB)).Node("a10-1").AppRunning("c").Build()
	}
	const ascendQuota = `ResourceQuota "q" limits.huawei.com/Ascend910B2-memory`
	tests := []struct {
		name      string
		running   []*corev1.Pod
		pod       *corev1.Pod
		effective effective.Usage
		denials   []string
		warnings  []string
		exceeded  []LimitCheck
	}{
		{name: "Ascend pod over the Ascend memory limit", running: []*corev1.Pod{usingNPU(40960)},
			pod:       testpod.New("p").NS("team-a").App("c", npu(1, 32768)...).Build(),
			effective: effective.Usage{ascendName: {GPU: 1, MemMiB: 32768}},
			denials:   []string{`namespace "team-a": huawei.com/Ascend910B2-memory: pod needs 32768 MiB, 40960 MiB used + 0 MiB reserved, limit 65536 MiB (` + ascendQuota + `)`},
			exceeded: []LimitCheck{{Family: ascendName, Resource: string(ascendMem), Used: 40960, Pod: 32768, After: 73728, Limit: 65536,
				Quota: "q", Key: "limits." + string(ascendMem), Exceeded: true}}},
		{name: "Ascend pod within the Ascend limit", running: []*corev1.Pod{usingNPU(16384)},
			pod:       testpod.New("p").NS("team-a").App("c", npu(1, 32768)...).Build(),
			effective: effective.Usage{ascendName: {GPU: 1, MemMiB: 32768}}},
		{name: "nvidia and Ascend, only Ascend over: one denial", running: []*corev1.Pod{usingNPU(40960)},
			pod:       testpod.New("p").NS("team-a").App("gpu", testpod.GPU(1), testpod.Mem(4096)).App("npu", npu(1, 32768)...).Build(),
			effective: effective.Usage{nvidia: {GPU: 1, MemMiB: 4096}, ascendName: {GPU: 1, MemMiB: 32768}},
			denials:   []string{`namespace "team-a": huawei.com/Ascend910B2-memory: pod needs 32768 MiB, 40960 MiB used + 0 MiB reserved, limit 65536 MiB (` + ascendQuota + `)`},
			exceeded: []LimitCheck{{Family: ascendName, Resource: string(ascendMem), Used: 40960, Pod: 32768, After: 73728, Limit: 65536,
				Quota: "q", Key: "limits." + string(ascendMem), Exceeded: true}}},
		{name: "nvidia and Ascend, only nvidia over: the nvidia message unchanged", running: []*corev1.Pod{usingGPU(8192)},
			pod:       testpod.New("p").NS("team-a").App("gpu", testpod.GPU(1), testpod.Mem(20480)).App("npu", npu(1, 32768)...).Build(),
			effective: effective.Usage{nvidia: {GPU: 1, MemMiB: 20480}, ascendName: {GPU: 1, MemMiB: 32768}},
			denials:   []string{`namespace "team-a": nvidia.com/gpumem: pod needs 20480 MiB, 8192 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "q" limits.nvidia.com/gpumem)`},
			exceeded: []LimitCheck{{Family: nvidia, Resource: "nvidia.com/gpumem", Used: 8192, Pod: 20480, After: 28672, Limit: 24576,
				Quota: "q", Key: "limits.nvidia.com/gpumem", Exceeded: true}}},
		{name: "Ascend near its limit warns", running: []*corev1.Pod{usingNPU(28672)},
			pod:       testpod.New("p").NS("team-a").App("gpu", testpod.GPU(1), testpod.Mem(4096)).App("npu", npu(1, 32768)...).Build(),
			effective: effective.Usage{nvidia: {GPU: 1, MemMiB: 4096}, ascendName: {GPU: 1, MemMiB: 32768}},
			warnings:  []string{`namespace "team-a": huawei.com/Ascend910B2-memory will be at 93 % of its limit after this pod (61440 of 65536 MiB, ResourceQuota "q")`}},
		{name: "nvidia pod in a namespace over its Ascend limit", running: []*corev1.Pod{usingNPU(98304)},
			pod:       testpod.New("p").NS("team-a").App("gpu", testpod.GPU(1), testpod.Mem(4096)).Build(),
			effective: effective.Usage{nvidia: {GPU: 1, MemMiB: 4096}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := twoFamilyDecider(t, e, tt.running...)
			got, err := d.Decide(context.Background(), Request{Pod: tt.pod})
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed != (len(tt.denials) == 0) || !got.Effective.Equal(tt.effective) ||
				!slices.Equal(got.Denials, tt.denials) || !slices.Equal(got.Warnings, tt.warnings) {
				t.Errorf("got  allowed=%v effective=%v\n  denials=%q\n  warnings=%q\nwant effective=%v\n  denials=%q\n  warnings=%q",
					got.Allowed, got.Effective, got.Denials, got.Warnings, tt.effective, tt.denials, tt.warnings)
			}
			if !reflect.DeepEqual(got.Exceeded, tt.exceeded) {
				t.Errorf("exceeded = %+v, want %+v", got.Exceeded, tt.exceeded)
			}
			dem, err := d.Demand(context.Background(), tt.pod)
			if err != nil || !dem.Effective().Equal(got.Effective) {
				t.Errorf("Demand = %v, %v; decision effective %v", dem.Effective(), err, got.Effective)
			}
		})
	}
}

// TestSecondFamilyExplained: the explanation lists every limit of every
// configured family, in the configuration's order (nvidia first), each
// with its family.
func TestSecondFamilyExplained(t *testing.T) {
	d, _ := twoFamilyDecider(t, loadedEngine(t),
		testpod.New("other").NS("team-a").App("c", npu(1, 40960)...).Node("npu-1").AppRunning("c").Build())
	pod := testpod.New("p").NS("team-a").App("gpu", testpod.GPU(1), testpod.Mem(4096)).App("npu", npu(1, 32768)...).Build()
	got, err := d.Decide(context.Background(), Request{Pod: pod, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	nvidia := d.Families()[0].Name
	want := []LimitCheck{
		{Family: nvidia, Resource: "nvidia.com/gpumem", Pod: 4096, After: 4096, Limit: 24576, Quota: "q", Key: "limits.nvidia.com/gpumem"},
		{Family: ascendName, Resource: string(ascendMem), Used: 40960, Pod: 32768, After: 73728, Limit: 65536, Quota: "q",
			Key: "limits." + string(ascendMem), Exceeded: true},
	}
	if got.Explanation == nil || !reflect.DeepEqual(got.Explanation.Limits, want) {
		t.Fatalf("explained limits = %+v, want %+v", got.Explanation, want)
	}
	if len(got.Explanation.Denials) != 1 || len(got.Explanation.Denials[0].Rules) == 0 {
		t.Errorf("explained denials = %+v, want one with its rules", got.Explanation.Denials)
	}
}

// TestSecondFamilyUnconfirmed: an unconfirmed reservation of the second
// family that blocks a pod marks it as fitting without it.
func TestSecondFamilyUnconfirmed(t *testing.T) {
	d, _ := twoFamilyDecider(t, loadedEngine(t))
	pod := testpod.New("p").NS("team-a").App("c", npu(1, 32768)...).Build()
	for _, tt := range []struct {
		name        string
		unconfirmed bool
		fitsWithout bool
	}{{"unconfirmed", true, true}, {"recorded", false, false}} {
		t.Run(tt.name, func(t *testing.T) {
			res := []reservation.Reservation{{UID: "g", Name: "g", Demand: effective.Usage{ascendName: {GPU: 1, MemMiB: 40960}}, Unconfirmed: tt.unconfirmed}}
			got, err := d.Decide(context.Background(), Request{Pod: pod, Reservations: res})
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed || got.FitsWithoutUnconfirmed != tt.fitsWithout {
				t.Fatalf("allowed %v, fits without unconfirmed %v; want false, %v (%q)", got.Allowed, got.FitsWithoutUnconfirmed, tt.fitsWithout, got.Denials)
			}
		})
	}
}

// TestSecondFamilyInput: the input document carries each family's demand,
// usage and settings under families, the nvidia family's also at the first
// level, and it matches the input's JSON Schema.
func TestSecondFamilyInput(t *testing.T) {
	ev := &capturing{Evaluator: loadedEngine(t)}
	d, _ := twoFamilyDecider(t, ev,
		testpod.New("other").NS("team-a").App("c", npu(2, 8192)...).Node("npu-1").AppRunning("c").Build())
	nvidia := d.Families()[0].Name
	pod := testpod.New("p").NS("team-a").App("gpu", testpod.GPU(1), testpod.Mem(4096)).App("npu", npu(1, 32768)...).Build()
	if _, err := d.Decide(context.Background(), Request{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	doc, err := ast.JSON(ev.last)
	if err != nil {
		t.Fatal(err)
	}
	in := doc.(map[string]any)
	vec := func(g, m, c int) map[string]any {
		return map[string]any{"gpu": jsonNum(g), "gpumem": jsonNum(m), "gpucores": jsonNum(c)}
	}
	demand, usage, settings := in["demand"].(map[string]any), in["namespaceUsage"].(map[string]any), in["settings"].(map[string]any)
	dfam, ufam, sfam := demand["families"].(map[string]any), usage["families"].(map[string]any), settings["families"].(map[string]any)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"demand.families[nvidia].effective", field(dfam, nvidia, "effective"), vec(1, 4096, 0)},
		{"demand.families[ascend].effective", field(dfam, ascendName, "effective"), vec(1, 32768, 0)},
		{"demand.families[ascend].maxPerDevice", field(dfam, ascendName, "maxPerDevice"), vec(1, 32768, 0)},
		{"demand.effective (nvidia)", demand["effective"], vec(1, 4096, 0)},
		{"demand.containers (nvidia)", len(demand["containers"].([]any)), 1},
		{"demand.families[ascend].containers", len(field(dfam, ascendName, "containers").([]any)), 1},
		{"namespaceUsage.families[ascend].used", field(ufam, ascendName, "used"), vec(2, 16384, 0)},
		{"namespaceUsage.families[ascend].after", field(ufam, ascendName, "after"), vec(3, 49152, 0)},
		{"namespaceUsage.families[ascend].limits.gpumem.afterPercent", field(ufam, ascendName, "limits", "gpumem", "afterPercent"), jsonNum(75)},
		{"namespaceUsage.families[nvidia].after", field(ufam, nvidia, "after"), vec(1, 4096, 0)},
		{"namespaceUsage.used (nvidia)", usage["used"], vec(0, 0, 0)},
		{"namespaceUsage.after (nvidia)", usage["after"], vec(1, 4096, 0)},
		{"settings.families[ascend].resourceNames.gpumem", field(sfam, ascendName, "resourceNames", "gpumem"), string(ascendMem)},
		{"settings.families[nvidia].resourceNames", field(sfam, nvidia, "resourceNames"), settings["resourceNames"]},
		{"settings.resourceNames.gpumem", field(settings["resourceNames"], "gpumem"), "nvidia.com/gpumem"},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("input.%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	matchesSchema(t, ev.last)
}

// field reads key (then the keys of more) of a JSON object; nil if absent.
func field(v any, key string, more ...string) any {
	m, _ := v.(map[string]any)
	out := m[key]
	for _, k := range more {
		out = field(out, k)
	}
	return out
}

// jsonNum is n as ast.JSON renders an integer.
func jsonNum(n int) any {
	v, err := ast.JSON(ast.Number(fmt.Sprint(n)))
	if err != nil {
		panic(err)
	}
	return v
}

func matchesSchema(t *testing.T, in ast.Value) {
	t.Helper()
	var schema any
	if err := util.Unmarshal(policy.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	st, err := ast.InterfaceToValue(schema)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rego.New(rego.Query(fmt.Sprintf("[ok, errors] := json.match_schema(input, %v)", st)), rego.ParsedInput(in)).Eval(context.Background())
	if err != nil || len(rs) != 1 {
		t.Fatalf("schema check: %v %v", rs, err)
	}
	if ok := rs[0].Bindings["ok"]; ok != true {
		t.Fatalf("input does not match its schema: %v\ninput: %v", rs[0].Bindings["errors"], in)
	}
}
