package burn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// randomTimeline has up to 4 segments of random charges (negative ones
// included: a hostile charge must burn nothing, never a negative amount).
func randomTimeline(r *rand.Rand) burn.Timeline {
	var tl burn.Timeline
	t := at(time.Duration(r.IntN(3600_000)) * time.Millisecond)
	for range r.IntN(5) {
		v := effective.Vector{GPU: r.Int64N(9) - 2, MemMiB: r.Int64N(90000) - 1000, Cores: r.Int64N(101)}
		tl.Segments = append(tl.Segments, burn.Segment{From: t, Charge: effective.Usage{"nvidia": v}})
		t = t.Add(time.Duration(r.Int64N(int64(3 * time.Hour))))
	}
	if r.IntN(2) == 0 {
		tl.End = t
	}
	return tl
}

// TestBetweenAdditiveAndNonNegative: Between over [a,b) plus [b,c) is
// Between over [a,c), to the unit-millisecond; no amount is ever negative;
// an empty or reversed interval burns nothing.
func TestBetweenAdditiveAndNonNegative(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 1))
	for i := range 2000 {
		tl := randomTimeline(r)
		pts := []time.Time{}
		for range 3 {
			pts = append(pts, at(time.Duration(r.Int64N(int64(14*time.Hour)))-time.Hour))
		}
		a, b, c := sorted3(pts)
		sum := tl.Between(a, b).Add(tl.Between(b, c))
		whole := tl.Between(a, c)
		if fmt.Sprint(sum) != fmt.Sprint(whole) {
			t.Fatalf("case %d: [a,b)+[b,c) = %v, [a,c) = %v (timeline %+v)", i, sum, whole, tl)
		}
		for k, v := range whole {
			if v < 0 {
				t.Fatalf("case %d: negative burn %d of %v", i, v, k)
			}
		}
		if got := tl.Between(c, a); a.Before(c) && len(got) != 0 {
			t.Fatalf("case %d: reversed interval burns %v", i, got)
		}
	}
}

func sorted3(p []time.Time) (a, b, c time.Time) {
	for i := range p {
		for j := i + 1; j < len(p); j++ {
			if p[j].Before(p[i]) {
				p[i], p[j] = p[j], p[i]
			}
		}
	}
	return p[0], p[1], p[2]
}

// lifecycle is a pod's honest run: its regular init containers one after
// the other, then the app; runs for the status at any moment.
type lifecycle struct {
	pod  *corev1.Pod
	runs []run // in start order; the app last
	done bool  // the app finishes (else it runs on)
}

func randomLifecycle(r *rand.Rand) lifecycle {
	b := testpod.New("p").NS("ns")
	n := r.IntN(4)
	for i := range n {
		b = b.Init(fmt.Sprintf("init%d", i), testpod.GPU(1+r.Int64N(3)), testpod.Mem(1+r.Int64N(40000)))
	}
	b = b.App("app", testpod.GPU(1+r.Int64N(2)), testpod.Mem(1+r.Int64N(20000)))
	lc := lifecycle{pod: b.Build(), done: r.IntN(2) == 0}
	lc.pod.CreationTimestamp = metav1.NewTime(t0)
	t := at(time.Duration(r.Int64N(int64(10 * time.Minute))))
	step := func() time.Time { t = t.Add(time.Second + time.Duration(r.Int64N(int64(time.Hour)))); return t }
	for i := range n {
		s := t
		lc.runs = append(lc.runs, run{name: fmt.Sprintf("init%d", i), init: true, started: s, finish: step()})
	}
	app := run{name: "app", started: t}
	if lc.done {
		app.finish = step()
	}
	lc.runs = append(lc.runs, app)
	return lc
}

// statusAt is the pod as its node reports it at moment m.
func (lc lifecycle) statusAt(m time.Time) *corev1.Pod {
	var runs []run
	for _, rn := range lc.runs {
		if rn.started.After(m) {
			break
		}
		if rn.finish.After(m) {
			rn.finish = time.Time{}
		}
		runs = append(runs, rn)
	}
	return withRuns(lc.pod, runs...)
}

// observe is what a replica records seeing p at m.
func observe(obs *burn.Observed, p *corev1.Pod, m time.Time) {
	started := len(p.Status.InitContainerStatuses)+len(p.Status.ContainerStatuses) > 0
	terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	if !started {
		return
	}
	if obs.FirstRunning.IsZero() {
		obs.FirstRunning = m
	}
	if !terminal {
		obs.LastRunning = m
		if obs.StageSeen == nil {
			obs.StageSeen = map[int]time.Time{}
		}
		obs.StageSeen[effective.StageOf(p).From] = m
	}
}

// TestPodTimelineNeverUnderLedger: at every moment a replica observed a
// started pod, the timeline burns at least the ledger's charge of what it
// observed, per family and dimension; an honest pod burns exactly what its
// own timestamps say, whatever was observed. With an honest node at the observed
// moment itself; with a node that rewrote every timestamp of the final
// status (starts later, finishes earlier, init exits earlier) still at
// that moment less the tolerance.
func TestPodTimelineNeverUnderLedger(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 2))
	const tol = time.Minute
	for i := range 500 {
		lc := randomLifecycle(r)
		last := lc.runs[len(lc.runs)-1]
		horizon := last.started.Add(2 * time.Hour)
		if lc.done {
			horizon = last.finish.Add(time.Hour)
		}
		obs := burn.Observed{Tolerance: tol}
		var moments []time.Time
		for m := t0; m.Before(horizon); m = m.Add(time.Duration(1+r.Int64N(int64(20*time.Minute))) + time.Millisecond) {
			p := lc.statusAt(m)
			observe(&obs, p, m)
			moments = append(moments, m)
		}
		final := lc.statusAt(horizon)
		honest := burn.PodTimeline(final, chargeOf(final), obs)
		// An honest node's timestamps are within what was observed: the
		// observations change nothing (no over-count either).
		bare := burn.PodTimeline(final, chargeOf(final), burn.Observed{})
		if a, b := honest.Between(t0, horizon), bare.Between(t0, horizon); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("case %d: an honest pod observed burns %v, by its own timestamps %v", i, a, b)
		}
		lying := burn.PodTimeline(lie(final, r), chargeOf(final), obs)
		for _, m := range moments {
			p := lc.statusAt(m)
			if len(p.Status.InitContainerStatuses)+len(p.Status.ContainerStatuses) == 0 {
				continue
			}
			want := ledgerCharge(p)
			assertAtLeast(t, fmt.Sprintf("case %d honest at %s", i, m.Sub(t0)), honest.ChargeAt(m), want)
			if e := m.Add(-tol - time.Millisecond); !e.Before(obs.FirstRunning) {
				assertAtLeast(t, fmt.Sprintf("case %d lying at %s", i, m.Sub(t0)), lying.ChargeAt(e), want)
			}
		}
	}
}

// lie rewrites the node's timestamps: every start later, every finish
// earlier (never before its start).
func lie(p *corev1.Pod, r *rand.Rand) *corev1.Pod {
	p = p.DeepCopy()
	shift := func(s, f *metav1.Time) {
		if s != nil {
			*s = metav1.NewTime(s.Add(time.Duration(r.Int64N(int64(time.Hour)))))
		}
		if f != nil {
			*f = metav1.NewTime(f.Add(-time.Duration(r.Int64N(int64(time.Hour)))))
		}
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if x := list[i].State.Running; x != nil {
				shift(&x.StartedAt, nil)
			}
			if x := list[i].State.Terminated; x != nil {
				shift(&x.StartedAt, &x.FinishedAt)
			}
		}
	}
	return p
}

func assertAtLeast(t *testing.T, what string, got, want effective.Usage) {
	t.Helper()
	for fam, w := range want {
		g := got.Of(fam)
		for _, d := range effective.Dimensions() {
			if g.Get(d) < w.Get(d) {
				t.Fatalf("%s: burns %s, the ledger charged %s", what, got, want)
			}
		}
	}
}
