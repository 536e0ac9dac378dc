package workloadcheck_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
	"github.com/gpuadmit/gpuadmit/pkg/workloadcheck"
)

const ns = "team-a"

// world is a ledger of team-a with quotas, recorded pods and nodes, and a
// decider on it (no policy: the workload check reads demand and limits).
type world struct {
	quotas []*corev1.ResourceQuota
	pods   []*corev1.Pod
	nodes  []*corev1.Node
	setup  func(*ledger.Ledger)
}

func (w world) build(t *testing.T) (*ledger.Ledger, *decision.Decider) {
	t.Helper()
	l := ledger.New(ledger.Options{Families: config.Families(config.Default()), Log: logr.Discard()})
	testns.Known(l, ns)
	for _, n := range w.nodes {
		l.UpsertNode(n)
	}
	for _, q := range w.quotas {
		l.UpsertQuota(q)
	}
	for _, p := range w.pods {
		l.UpsertPod(p)
	}
	if w.setup != nil {
		w.setup(l)
	}
	d, err := decision.New(nil, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return l, d
}

func quota(hard map[string]string) *corev1.ResourceQuota { return testquota.New(ns, "gpu", hard) }

// mem is a template of one app container asking one GPU and memMiB.
func mem(memMiB int64) *corev1.Pod {
	return testpod.New("t").NS(ns).App("c", testpod.GPU(1), testpod.Mem(memMiB)).Build()
}

// used is a recorded pod of team-a named name, asking one GPU and memMiB.
func used(name string, memMiB int64) *corev1.Pod {
	return testpod.New(name).NS(ns).App("c", testpod.GPU(1), testpod.Mem(memMiB)).Build()
}

func deploy(pod *corev1.Pod, n int64) *workloadcheck.Workload {
	return &workloadcheck.Workload{Kind: "Deployment", Namespace: ns, Name: "train", Sets: []workload.PodSet{{Name: "spec.template", Pod: pod, Count: n}}}
}

func job(pod *corev1.Pod, n int64) *workloadcheck.Workload {
	return &workloadcheck.Workload{Kind: "Job", Namespace: ns, Name: "train", Sets: []workload.PodSet{{Name: "spec.template", Pod: pod, Count: n}}}
}

var gib24 = quota(map[string]string{"limits.nvidia.com/gpumem": "24576"})

type checkCase struct {
	name    string
	world   world
	req     workloadcheck.Request
	warnOn  bool
	allowed bool
	// denial and warning are substrings of the messages ("": none expected).
	denial, warning string
}

// TestCheck attacks the workload check: every allowed workload that is
// not a shrink fits every limit that applies to it as a whole.
func TestCheck(t *testing.T) {
	for _, tt := range checkCases() {
		t.Run(tt.name, func(t *testing.T) {
			l, d := tt.world.build(t)
			c := &workloadcheck.Checker{Fit: d, Warn: tt.warnOn}
			v, err := c.Check(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if v.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v (denials %q, warnings %q)", v.Allowed, tt.allowed, v.Denials, v.Warnings)
			}
			assertContains(t, "denial", v.Denials, tt.denial)
			assertContains(t, "warning", v.Warnings, tt.warning)
			if v.Allowed && !v.Shrinks && !tt.warnOn {
				assertFits(t, l, d, tt.req.New)
			}
		})
	}
}

func assertContains(t *testing.T, what string, msgs []string, want string) {
	t.Helper()
	joined := strings.Join(msgs, "\n")
	switch {
	case want == "" && len(msgs) > 0:
		t.Errorf("unexpected %ss: %q", what, msgs)
	case want != "" && !strings.Contains(joined, want):
		t.Errorf("%ss %q do not say %q", what, msgs, want)
	}
}

// assertFits recounts, independently of the checker, the workload's pods
// x demand against every limit of its namespace: admitted <= limit.
func assertFits(t *testing.T, l *ledger.Ledger, d *decision.Decider, w *workloadcheck.Workload) {
	t.Helper()
	need := map[string]float64{}
	lim := map[string]int64{}
	for _, s := range w.Sets {
		f, err := d.TemplateFit(context.Background(), ns, s.Pod, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range f.Limits {
			k := u.Quota + "/" + u.Resource
			need[k] += float64(s.Count) * float64(f.Demand.Of(u.Family).Get(u.Dimension))
			lim[k] = u.Limit
		}
	}
	for k, n := range need {
		if n > float64(lim[k]) {
			t.Errorf("admitted %s: %v over the limit %d", k, n, lim[k])
		}
	}
	_ = l
}

func checkCases() []checkCase {
	gpus5 := quota(map[string]string{"limits.nvidia.com/gpu": "5"})
	return []checkCase{
		{name: "4 x 8 GiB into 24 GiB denied", world: world{quotas: []*corev1.ResourceQuota{gib24}},
			req:    workloadcheck.Request{New: deploy(mem(8192), 4)},
			denial: "Deployment team-a/train can never run whole: 4 pods x 8192 MiB = 32768 MiB of nvidia.com/gpumem, over the limit 24576 MiB of ResourceQuota gpu"},
		{name: "3 x 8 GiB into 24 GiB admitted", world: world{quotas: []*corev1.ResourceQuota{gib24}},
			req: workloadcheck.Request{New: deploy(mem(8192), 3)}, allowed: true},
		{name: "Warn enforcement admits with a warning", world: world{quotas: []*corev1.ResourceQuota{gib24}}, warnOn: true,
			req: workloadcheck.Request{New: deploy(mem(8192), 4)}, allowed: true, warning: "(admitted: workloads.enforcement is Warn)"},
		{name: "Job 8 x 1 GPU vs a limit of 5 denied", world: world{quotas: []*corev1.ResourceQuota{gpus5}},
			req: workloadcheck.Request{New: job(mem(1024), 8)}, denial: "8 pods x 1 = 8 of nvidia.com/gpu, over the limit 5"},
		{name: "huge replica count refused, never wrapped", world: world{quotas: []*corev1.ResourceQuota{gib24}},
			req: workloadcheck.Request{New: deploy(mem(8192), math.MaxInt64/1024)}, denial: "does not fit in 64 bits"},
		{name: "max int64 pods of 1 GPU past the limit", world: world{quotas: []*corev1.ResourceQuota{gpus5}},
			req: workloadcheck.Request{New: deploy(mem(1), math.MaxInt64)}, denial: "9223372036854775807 pods x 1"},
		{name: "an init container's peak counts", world: world{quotas: []*corev1.ResourceQuota{gpus5}},
			req:    workloadcheck.Request{New: deploy(testpod.New("t").NS(ns).Init("i", testpod.GPU(2)).App("c", testpod.GPU(1)).Build(), 3)},
			denial: "3 pods x 2 = 6 of nvidia.com/gpu"},
		{name: "a sidecar adds to the app", world: world{quotas: []*corev1.ResourceQuota{gpus5}},
			req:    workloadcheck.Request{New: deploy(testpod.New("t").NS(ns).Sidecar("s", testpod.GPU(1)).App("c", testpod.GPU(1)).Build(), 3)},
			denial: "3 pods x 2 = 6 of nvidia.com/gpu"},
		{name: "a memory percentage resolves against the nodes' devices",
			world:  world{quotas: []*corev1.ResourceQuota{gib24}, nodes: []*corev1.Node{testnode.WithGPUs("n1", nil, 16384)}},
			req:    workloadcheck.Request{New: deploy(testpod.New("t").NS(ns).App("c", testpod.GPU(1), testpod.MemPct(50)).Build(), 4)},
			denial: "4 pods x 8192 MiB = 32768 MiB"},
		{name: "a template's ResourceClaimTemplate is charged", world: world{quotas: []*corev1.ResourceQuota{gib24}, setup: func(l *ledger.Ledger) {
			l.UpsertTemplate(testclaim.Template(ns, "gpu-8g", testclaim.HAMiDRA(ns, "x", 1, 8192, 0)))
		}}, req: workloadcheck.Request{New: deploy(testclaim.TemplatePod(ns, "t", "gpu-8g"), 4)}, denial: "4 pods x 8192 MiB = 32768 MiB"},
		{name: "a scoped quota the template matches", world: world{quotas: []*corev1.ResourceQuota{scoped("high", "2")}},
			req: workloadcheck.Request{New: deploy(withPriority(mem(1024), "high"), 3)}, denial: "over the limit 2 of ResourceQuota prio (scopes PriorityClass In (high))"},
		{name: "a scoped quota the template does not match", world: world{quotas: []*corev1.ResourceQuota{scoped("high", "2")}},
			req: workloadcheck.Request{New: deploy(withPriority(mem(1024), "low"), 3)}, allowed: true},
		{name: "scale to 0 of a workload over a lowered limit", world: world{quotas: []*corev1.ResourceQuota{gpus2()}},
			req: workloadcheck.Request{New: deploy(mem(1024), 0), Old: deploy(mem(1024), 4)}, allowed: true},
		{name: "a shrink over a full quota is allowed", world: world{quotas: []*corev1.ResourceQuota{gpus2()}, pods: ownPods(4, 1024)},
			req: workloadcheck.Request{New: deploy(mem(1024), 3), Old: deploy(mem(1024), 4)}, allowed: true},
		{name: "a growth over the limit is denied", world: world{quotas: []*corev1.ResourceQuota{gpus2()}},
			req: workloadcheck.Request{New: deploy(mem(1024), 4), Old: deploy(mem(1024), 3)}, denial: "4 pods x 1 = 4"},
		{name: "an UPDATE moving the pods under a tighter scoped quota is checked", world: world{quotas: []*corev1.ResourceQuota{scoped("prod", "2")}},
			req:    workloadcheck.Request{New: deploy(withPriority(mem(1024), "prod"), 4), Old: deploy(withPriority(mem(1024), "batch"), 4)},
			denial: "4 pods x 1 = 4 of nvidia.com/gpu, over the limit 2 of ResourceQuota prio (scopes PriorityClass In (prod))"},
		{name: "an UPDATE moving fewer pods under a scoped quota is checked", world: world{quotas: []*corev1.ResourceQuota{scoped("prod", "2")}},
			req:    workloadcheck.Request{New: deploy(withPriority(mem(1024), "prod"), 3), Old: deploy(withPriority(mem(1024), "batch"), 4)},
			denial: "3 pods x 1 = 3 of nvidia.com/gpu, over the limit 2 of ResourceQuota prio"},
		{name: "a shrink under the same scoped quota is allowed", world: world{quotas: []*corev1.ResourceQuota{scoped("prod", "2")}},
			req: workloadcheck.Request{New: deploy(withPriority(mem(1024), "prod"), 3), Old: deploy(withPriority(mem(1024), "prod"), 4)}, allowed: true},
		{name: "fewer pods with a higher demand is checked", world: world{quotas: []*corev1.ResourceQuota{gib24}},
			req: workloadcheck.Request{New: deploy(mem(16384), 2), Old: deploy(mem(8192), 3)}, denial: "2 pods x 16384 MiB = 32768 MiB"},
		{name: "fits the limit but not the headroom: pods will wait",
			world: world{quotas: []*corev1.ResourceQuota{gib24}, pods: []*corev1.Pod{used("other-1", 8192), used("other-2", 8192)}},
			req:   workloadcheck.Request{New: deploy(mem(8192), 3)}, allowed: true, warning: "2 of 3 pods will wait"},
		{name: "the workload's own pods count as used", world: world{quotas: []*corev1.ResourceQuota{gib24}, pods: ownPods(2, 8192)},
			req: workloadcheck.Request{New: deploy(mem(8192), 3), Old: deploy(mem(8192), 2), Own: nvMem(2, 16384)}, allowed: true},
		{name: "a full namespace's rollout stalls", world: world{quotas: []*corev1.ResourceQuota{gib24}, pods: ownPods(3, 8192)},
			req: workloadcheck.Request{New: deploy(mem(8192), 3), Old: deploy(mem(8192), 3), Own: nvMem(3, 24576), Surge: 1}, allowed: true,
			warning: "the rollout will stall: its 1 surge pod(s) need 8192 MiB of nvidia.com/gpumem, and 0 MiB is free"},
		{name: "an invalid template is denied", world: world{quotas: []*corev1.ResourceQuota{gib24}},
			req: workloadcheck.Request{New: deploy(testpod.New("t").NS(ns).App("c", testpod.Res(testpod.GPUName, "1.5")).Build(), 1)}, denial: "no pod is admitted with"},
	}
}
