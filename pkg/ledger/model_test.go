package ledger

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// modelSeed replays TestModelLedgerEqualsRecomputation with one seed (a
// failure prints its seed): go test ./pkg/ledger -run TestModel
// -model.seed=N, or GPUADMIT_MODEL_SEED=N.
var modelSeed = flag.Uint64("model.seed", 0, "run the ledger's model test with this seed alone (0: seeds 1, 2 and one drawn from the time)")

// modelSeeds are the seeds to run: the one asked for, else 1, 2 and one
// drawn from the time (logged, and printed on failure, so that it replays).
func modelSeeds(t *testing.T) []uint64 {
	t.Helper()
	if *modelSeed != 0 {
		return []uint64{*modelSeed}
	}
	if v := os.Getenv("GPUADMIT_MODEL_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil || seed == 0 {
			t.Fatalf("GPUADMIT_MODEL_SEED=%q: want a positive integer", v)
		}
		return []uint64{seed}
	}
	return []uint64{1, 2, uint64(time.Now().UnixNano())}
}

// TestModelLedgerEqualsRecomputation drives the ledger with random events
// (creates, status changes, binds, deletes, missed deletions, relists,
// duplicate events, recreations under the same name, node and quota
// changes, mirrored reservations) through the production feed's paths (the
// pod transform and the pod feed's processing, feed.PodProcess; the node
// and quota handlers) and checks after every step that it equals a
// from-scratch recomputation over the current objects and that nothing is
// negative. Every 500 steps a ledger rebuilt from the current objects must
// produce the same snapshot. The world holds pods, quotas and reservations
// of two families (nvidia and Ascend, some pods both): the recomputation is
// per family. A seed replays its run exactly (TestModelReplays).
func TestModelLedgerEqualsRecomputation(t *testing.T) {
	steps := 100_000
	if testing.Short() {
		steps = 10_000
	}
	for _, seed := range modelSeeds(t) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Logf("seed %d (replay: go test ./pkg/ledger -run TestModelLedgerEqualsRecomputation -model.seed=%d)", seed, seed)
			m := newModel(seed)
			for i := range steps / 2 {
				op := m.step()
				m.settleFloors()
				if err := cmp.Or(m.check(), m.checkKept(i)); err != nil {
					t.Fatalf("seed %d, step %d (%s): %v", seed, i, op, err)
				}
				if i%500 == 0 {
					if err := m.checkRebuilt(); err != nil {
						t.Fatalf("seed %d, step %d (%s): rebuilt ledger differs: %v", seed, i, op, err)
					}
				}
			}
			for _, what := range []string{"used nvidia", "used " + ascendName, "reserved nvidia", "reserved " + ascendName,
				"limits nvidia", "limits " + ascendName, "pod of two families"} {
				if m.exercised[what] == 0 {
					t.Errorf("seed %d: the random world never had %s", seed, what)
				}
			}
			t.Logf("checks that saw: %v", m.exercised)
		})
	}
}

// TestModelReplays: two runs of one seed apply the same events and reach
// the same ledger, step by step (no choice depends on a map's order), so
// a seed printed by a failure replays it.
func TestModelReplays(t *testing.T) {
	seed := uint64(7)
	if *modelSeed != 0 {
		seed = *modelSeed
	}
	run := func() []string {
		m := newModel(seed)
		var trace []string
		for range 3000 {
			op := m.step()
			m.settleFloors()
			snap, err := json.Marshal(m.l.Snapshot(nil)) // pointers followed, map keys sorted
			if err != nil {
				t.Fatal(err)
			}
			trace = append(trace, op+" "+string(snap))
		}
		return trace
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed %d, step %d: the runs differ:\n%s\n%s", seed, i, a[i], b[i])
		}
	}
	t.Logf("seed %d: 3000 steps replayed identically, the last %s", seed, strings.SplitN(a[len(a)-1], " ", 2)[0])
}

type model struct {
	r        *rand.Rand
	l        *Ledger
	pods     map[types.UID]*corev1.Pod
	byName   map[string]types.UID
	old      map[types.UID]*corev1.Pod // the previous version of each pod (stale events)
	nodes    map[string]*corev1.Node
	nodeMem  map[string]int64 // oracle: largest device memory when the annotation is valid
	nodeDevs map[string][]string
	devMem   map[string]map[string]int64 // oracle: device memory by node and UUID when the annotation is valid
	quotas   map[string]*corev1.ResourceQuota
	pending  map[string][]reservation.Reservation // the reservations handed in, by namespace
	seen     map[types.UID]bool                   // oracle: GPU pods the watch delivered and has not seen go
	floor    map[types.UID]int64                  // oracle: the device size each pod's admission resolved
	nodeSize map[types.UID]int64                  // oracle: the largest device size each bound pod's node announced since binding
	// exercised counts the checks that saw each family in use, reserved
	// and limited (and pods of both families): the world must hold them.
	exercised map[string]int
	next      int // UID sequence
	memo      map[memoKey]derivation
	// slim and feedPods are the production pod path: the pod transform
	// and the pod feed's processing of what its queue pops.
	slim     toolscache.TransformFunc
	feedPods toolscache.ProcessFunc
	nodeH    toolscache.ResourceEventHandlerFuncs
	quotaH   toolscache.ResourceEventHandlerFuncs
	// err is the first error of the pod path (check returns it).
	err error
	// kept is a snapshot taken earlier (checkKept).
	kept keptSnapshot
}

type memoKey struct {
	pod *corev1.Pod
	opt string
}

var (
	modelNamespaces = []string{"a", "b", "c", "d"}
	modelNodes      = []string{"n1", "n2", "n3", "n4"}
)

func newModel(seed uint64) *model {
	l := New(Options{Families: twoFamilies()})
	l.NodesListed() // pending pods keep what was first resolved
	return &model{
		r: rand.New(rand.NewPCG(seed, seed*7919)), l: l,
		pods: map[types.UID]*corev1.Pod{}, byName: map[string]types.UID{}, old: map[types.UID]*corev1.Pod{},
		nodes: map[string]*corev1.Node{}, nodeMem: map[string]int64{}, nodeDevs: map[string][]string{}, devMem: map[string]map[string]int64{},
		quotas: map[string]*corev1.ResourceQuota{}, pending: map[string][]reservation.Reservation{}, seen: map[types.UID]bool{}, memo: map[memoKey]derivation{},
		floor: map[types.UID]int64{}, nodeSize: map[types.UID]int64{}, exercised: map[string]int{},
		slim: podwire.PodTransform(l.Families()), feedPods: feed.PodProcess(l, logr.Discard()),
		nodeH: feed.NodeHandler(l, logr.Discard()), quotaH: feed.QuotaHandler(l, logr.Discard()),
	}
}

// pick draws one pod of the world, from its pods in UID order (never in a
// map's order: a seed replays).
func (m *model) pick() *corev1.Pod {
	if len(m.pods) == 0 {
		return nil
	}
	return m.pods[m.uids()[m.r.IntN(len(m.pods))]]
}

// uids are the world's pods' UIDs, sorted.
func (m *model) uids() []types.UID { return slices.Sorted(maps.Keys(m.pods)) }

// podEvent hands the ledger one pod event through the production path:
// the object slimmed by the pod transform (as the pod feed's queue does),
// then the pod feed's processing.
func (m *model) podEvent(typ toolscache.DeltaType, obj any) {
	slim, err := m.slim(obj)
	if err == nil {
		err = m.feedPods(toolscache.Deltas{{Type: typ, Object: slim}}, false)
	}
	if err != nil && m.err == nil {
		m.err = fmt.Errorf("pod path, %s %T: %w", typ, obj, err)
	}
}

// relistPods hands the ledger the world's pods as one list (the pod watch
// relisted): pods it lacks are gone.
func (m *model) relistPods() {
	var objs []any
	for _, uid := range m.uids() {
		p := m.pods[uid]
		m.deliver(p)
		slim, err := m.slim(p)
		if err != nil && m.err == nil {
			m.err = fmt.Errorf("pod transform: %w", err)
		}
		objs = append(objs, slim)
	}
	if err := m.feedPods(toolscache.Deltas{{Type: toolscache.ReplacedAll, Object: toolscache.ReplacedAllInfo{Objects: objs}}}, false); err != nil && m.err == nil {
		m.err = fmt.Errorf("pod path, a list: %w", err)
	}
}

// step applies one random event to the world and delivers it to the ledger
// the way the pod feed does (duplicates and resyncs included).
func (m *model) step() string {
	switch k := m.r.IntN(100); {
	case k < 14:
		return m.create()
	case k < 44:
		if p := m.pick(); p != nil {
			m.update(p, m.mutateStatus(p.DeepCopy()))
			return "status"
		}
	case k < 54:
		if p := m.pick(); p != nil {
			m.update(p, m.bind(p.DeepCopy()))
			return "bind"
		}
	case k < 64:
		if p := m.pick(); p != nil {
			m.remove(p)
			return "delete"
		}
	case k < 70:
		if p := m.pick(); p != nil {
			m.deliver(p)
			m.podEvent(toolscache.Updated, p) // duplicate
			return "duplicate"
		}
	case k < 76:
		if p := m.pick(); p != nil {
			m.deliver(p)
			m.podEvent(toolscache.Sync, p) // a resync: the same object again
			return "sync"
		}
	case k < 78:
		m.relist()
		return "relist"
	case k < 86:
		m.node()
		return "node"
	case k < 92:
		m.quota()
		return "quota"
	default:
		m.reserve()
		return "reserve"
	}
	return "noop"
}

func (m *model) res() []testpod.Opt {
	switch m.r.IntN(14) {
	case 0, 1:
		return []testpod.Opt{testpod.CPU("1")}
	case 2:
		return []testpod.Opt{gpu(int64(1 + m.r.IntN(2))), pct(int64(10 * (1 + m.r.IntN(10))))}
	case 3:
		return []testpod.Opt{mem(int64(1 + m.r.IntN(30000))), cores(int64(m.r.IntN(101)))}
	case 4:
		if m.r.IntN(10) == 0 {
			return []testpod.Opt{testpod.Res(testpod.GPUName, "1.5")} // invalid
		}
	case 5:
		return [][]testpod.Opt{{gpu(1)}, {gpu(2), mem(0)}, {gpu(1), pct(0)}}[m.r.IntN(3)] // whole cards
	case 10, 11: // the second family
		return []testpod.Opt{npu(int64(m.r.IntN(3))), npuMem(int64(m.r.IntN(40000)))}
	case 12:
		switch m.r.IntN(10) {
		case 0:
			return []testpod.Opt{npu(1)} // a whole NPU: unresolved (no Ascend device sizes)
		case 1:
			return []testpod.Opt{npu(1), testpod.Res(ascendMem, "1.5")} // invalid
		}
		return []testpod.Opt{npu(int64(1 + m.r.IntN(2))), npuMem(int64(1 + m.r.IntN(30000))), npuCores(int64(m.r.IntN(101)))}
	case 13: // both families in one container
		return []testpod.Opt{gpu(int64(m.r.IntN(3))), mem(int64(m.r.IntN(40000))), npu(int64(1 + m.r.IntN(2))), npuMem(int64(1 + m.r.IntN(30000)))}
	}
	return []testpod.Opt{gpu(int64(m.r.IntN(3))), mem(int64(m.r.IntN(40000)))}
}

func (m *model) create() string {
	ns := modelNamespaces[m.r.IntN(len(modelNamespaces))]
	name := fmt.Sprintf("p%d", m.r.IntN(16))
	m.next++
	b := testpod.New(name).NS(ns).UID(fmt.Sprintf("u%d", m.next))
	for i := range m.r.IntN(4) {
		if m.r.IntN(4) == 0 {
			b.Sidecar(fmt.Sprintf("s%d", i), m.res()...)
		} else {
			b.Init(fmt.Sprintf("i%d", i), m.res()...)
		}
	}
	for i := range 1 + m.r.IntN(2) {
		b.App(fmt.Sprintf("a%d", i), m.res()...)
	}
	if m.r.IntN(4) == 0 {
		b.NodeSelector("zone", fmt.Sprint(m.r.IntN(2)))
	}
	p := b.Build()
	if m.r.IntN(3) == 0 {
		p = m.bind(p)
	}
	op := "create"
	if prev, ok := m.byName[ns+"/"+name]; ok {
		if m.r.IntN(2) == 0 {
			m.remove(m.pods[prev])
		} else { // deleted and recreated while the watch was down: the relist shows the new pod under the name
			delete(m.seen, prev) // the list lacks its UID
			delete(m.pods, prev)
			delete(m.old, prev)
			m.pods[p.UID], m.byName[ns+"/"+name] = p, p.UID
			m.relistPods()
			return "recreate-unseen"
		}
		op = "recreate"
	}
	m.pods[p.UID], m.byName[ns+"/"+name] = p, p.UID
	m.deliver(p)
	m.podEvent(toolscache.Added, p)
	return op
}

func (m *model) update(prev, p *corev1.Pod) {
	m.old[p.UID], m.pods[p.UID] = prev, p
	m.deliver(p)
	m.podEvent(toolscache.Updated, p)
}

// deliver notes that the watch delivers p.
func (m *model) deliver(p *corev1.Pod) {
	if effective.RequestsAny(p, m.l.Families()) {
		m.seen[p.UID] = true
	}
}

func (m *model) remove(p *corev1.Pod) {
	delete(m.pods, p.UID)
	delete(m.byName, p.Namespace+"/"+p.Name)
	stale := m.old[p.UID]
	delete(m.old, p.UID)
	delete(m.seen, p.UID)
	switch m.r.IntN(4) {
	case 0: // the queue's tombstone, with the last object known
		m.podEvent(toolscache.Deleted, toolscache.DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: p})
	case 1: // the watch broke and missed it: the relist lacks it
		m.relistPods()
	case 2:
		if stale != nil { // the last object seen may be older than the world's
			m.podEvent(toolscache.Deleted, stale)
			return
		}
		fallthrough
	default:
		m.podEvent(toolscache.Deleted, p)
	}
}

// relist: every watch relisted. Nodes and quotas come again through their
// handlers; deletions the pod watch missed are pods the list lacks.
func (m *model) relist() {
	for _, name := range slices.Sorted(maps.Keys(m.nodes)) {
		m.nodeH.OnUpdate(m.nodes[name], m.nodes[name])
	}
	for _, key := range slices.Sorted(maps.Keys(m.quotas)) {
		m.quotaH.OnUpdate(m.quotas[key], m.quotas[key])
	}
	for range m.r.IntN(3) {
		if p := m.pick(); p != nil {
			delete(m.pods, p.UID)
			delete(m.byName, p.Namespace+"/"+p.Name)
			delete(m.old, p.UID)
			delete(m.seen, p.UID)
		}
	}
	m.relistPods()
}
