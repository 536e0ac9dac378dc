package ledger

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// TestModelLedgerEqualsRecomputation drives the ledger with random events
// (creates, status changes, binds, deletes and tombstones, relists,
// duplicate and stale updates, recreations under the same name, node and
// quota changes, mirrored reservations) and checks after every step that it equals a
// from-scratch recomputation over the current objects and that nothing is
// negative. Every 500 steps a ledger rebuilt from the current objects must
// produce the same snapshot. The world holds pods, quotas and reservations
// of two families (nvidia and Ascend, some pods both): the recomputation is
// per family.
func TestModelLedgerEqualsRecomputation(t *testing.T) {
	steps := 100_000
	if testing.Short() {
		steps = 10_000
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			m := newModel(seed)
			for i := range steps / 2 {
				op := m.step()
				m.settleFloors()
				if err := m.check(); err != nil {
					t.Fatalf("step %d (%s): %v", i, op, err)
				}
				if i%500 == 0 {
					if err := m.checkRebuilt(); err != nil {
						t.Fatalf("step %d (%s): rebuilt ledger differs: %v", i, op, err)
					}
				}
			}
			for _, what := range []string{"used nvidia", "used " + ascendName, "reserved nvidia", "reserved " + ascendName,
				"limits nvidia", "limits " + ascendName, "pod of two families"} {
				if m.exercised[what] == 0 {
					t.Errorf("the random world never had %s", what)
				}
			}
			t.Logf("checks that saw: %v", m.exercised)
		})
	}
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
	podH      toolscache.ResourceEventHandlerFuncs
	nodeH     toolscache.ResourceEventHandlerFuncs
	quotaH    toolscache.ResourceEventHandlerFuncs
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
		podH: PodHandler(l, logr.Discard()), nodeH: NodeHandler(l, logr.Discard()), quotaH: QuotaHandler(l, logr.Discard()),
	}
}

func (m *model) pick() *corev1.Pod {
	if len(m.pods) == 0 {
		return nil
	}
	n := m.r.IntN(len(m.pods))
	for _, p := range m.pods {
		if n == 0 {
			return p
		}
		n--
	}
	return nil
}

// step applies one random event to the world and delivers it to the ledger
// the way an informer would (or worse: duplicates, stale old objects).
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
			m.podH.OnUpdate(p, p) // duplicate
			return "duplicate"
		}
	case k < 76:
		if p := m.pick(); p != nil && m.old[p.UID] != nil {
			m.deliver(p)
			m.podH.OnUpdate(m.old[p.UID], p) // stale old object
			return "stale-old"
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
		} else { // deleted and recreated while the watch was down: the relist shows an update
			old := m.pods[prev]
			if m.holds(old) { // the ledger replaces the pod it holds under that name
				delete(m.seen, prev)
			}
			delete(m.pods, prev)
			delete(m.old, prev)
			m.pods[p.UID], m.byName[ns+"/"+name] = p, p.UID
			m.deliver(p)
			m.podH.OnUpdate(old, p)
			return "recreate-unseen"
		}
		op = "recreate"
	}
	m.pods[p.UID], m.byName[ns+"/"+name] = p, p.UID
	m.deliver(p)
	m.podH.OnAdd(p, false)
	return op
}

func (m *model) update(prev, p *corev1.Pod) {
	m.old[p.UID], m.pods[p.UID] = prev, p
	m.deliver(p)
	m.podH.OnUpdate(prev, p)
}

// deliver notes that the watch delivers p.
func (m *model) deliver(p *corev1.Pod) {
	if effective.RequestsAny(p, m.l.Families()) {
		m.seen[p.UID] = true
	}
}

func (m *model) remove(p *corev1.Pod) {
	holds := m.holds(p)
	delete(m.pods, p.UID)
	delete(m.byName, p.Namespace+"/"+p.Name)
	stale := m.old[p.UID]
	delete(m.old, p.UID)
	key := p.Namespace + "/" + p.Name
	kind := m.r.IntN(4)
	if kind != 1 || holds { // a tombstone without the object finds the pod by name only
		delete(m.seen, p.UID)
	}
	switch kind {
	case 0:
		m.podH.OnDelete(toolscache.DeletedFinalStateUnknown{Key: key, Obj: p})
	case 1:
		m.podH.OnDelete(toolscache.DeletedFinalStateUnknown{Key: key})
	case 2:
		if stale != nil { // the last object seen may be older than the world's
			m.podH.OnDelete(stale)
			return
		}
		fallthrough
	default:
		m.podH.OnDelete(p)
	}
}

// holds reports whether the ledger holds p by name: a record or an invalid pod.
func (m *model) holds(p *corev1.Pod) bool {
	d := m.oracle(p)
	return d.rec != nil || d.invalid != nil
}

func (m *model) relist() {
	for _, p := range m.pods {
		m.deliver(p)
		m.podH.OnUpdate(p, p)
	}
	for _, n := range m.nodes {
		m.nodeH.OnUpdate(n, n)
	}
	for _, q := range m.quotas {
		m.quotaH.OnUpdate(q, q)
	}
	for range m.r.IntN(3) { // deletions the watch missed arrive as tombstones
		if p := m.pick(); p != nil {
			delete(m.pods, p.UID)
			delete(m.byName, p.Namespace+"/"+p.Name)
			delete(m.old, p.UID)
			delete(m.seen, p.UID)
			m.podH.OnDelete(toolscache.DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: p})
		}
	}
}
