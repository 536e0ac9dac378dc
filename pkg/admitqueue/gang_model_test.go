package admitqueue

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// gangModel is a namespace driven at random through two replicas: gangs
// of 2..5 pods (each gang's pods of one size) and ordinary pods admitted
// in random interleavings, the watches recording admitted pods, recorded
// pods ending, the cleaners tidying, the clock moving (never as far as the
// hold timeout).
type gangModel struct {
	t      *testing.T
	r      *rand.Rand
	c      client.Client
	stores []*Store
	ledg   []*ledger.Ledger
	watch  []*fakeWatch
	limit  int64
	rv     uint64
	// gangs' sizes, demands, next pod, admitted pods; the admitted pods
	// not recorded yet, and the recorded ones.
	size, next, admitted []int
	need                 []int64
	demand               map[types.UID]int64
	pending, recorded    []*corev1.Pod
	ordinary             int
}

// TestModelGangsWholeAndWithinTheLimit checks, after every step, on each
// replica: what its ledger holds plus what it counts of the object
// (reservations and holds) never passes the limit, and equals a recount
// (recorded pods + unrecorded reservations + every hold's slots x demand);
// at the end every gang is admitted whole or not at all: none of its pods,
// or its pods and room held for the rest (a pod denied before its gang's
// first admitted pod, a controller creates again).
func TestModelGangsWholeAndWithinTheLimit(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		m := newGangModel(t, seed)
		for step := 0; step < 120 && m.left(); step++ {
			m.step()
			m.check(fmt.Sprintf("seed %d step %d", seed, step))
		}
		m.checkWhole(fmt.Sprintf("seed %d", seed))
	}
}

func newGangModel(t *testing.T, seed uint64) *gangModel {
	r := rand.New(rand.NewPCG(seed, seed))
	m := &gangModel{t: t, r: r, c: fakeClient(t), limit: int64(4096 + r.IntN(8)*1024), rv: 10, demand: map[types.UID]int64{}}
	clk := gangOpts().Clock
	for _, name := range []string{"a", "b"} {
		opts := gangOpts()
		opts.Clock = clk // one clock: the replicas' own clocks need not agree, but one is enough here
		s, l, w, _, _ := newGangStore(t, m.c, name, nil, opts)
		m.stores, m.ledg, m.watch = append(m.stores, s), append(m.ledg, l), append(m.watch, w)
	}
	for range 3 + r.IntN(4) {
		m.size = append(m.size, 2+r.IntN(4))
		m.need = append(m.need, int64(512*(1+r.IntN(4))))
		m.next, m.admitted = append(m.next, 0), append(m.admitted, 0)
	}
	return m
}

// left reports whether a gang has pods still to come.
func (m *gangModel) left() bool {
	for g := range m.size {
		if m.next[g] < m.size[g] {
			return true
		}
	}
	return false
}

func (m *gangModel) step() {
	switch k := m.r.IntN(10); {
	case k < 5:
		m.admitGangPod()
	case k < 6:
		m.admitOrdinary()
	case k < 8:
		m.record()
	case k < 9:
		m.end()
	default:
		m.stores[m.r.IntN(2)].Clean(m.t.Context())
		m.stores[0].opts.Clock.(interface{ Step(time.Duration) }).Step(time.Duration(m.r.IntN(3)) * time.Second)
	}
}

func (m *gangModel) admitGangPod() {
	g := m.r.IntN(len(m.size))
	if m.next[g] >= m.size[g] {
		return
	}
	name := fmt.Sprintf("g%d-%d", g, m.next[g])
	m.next[g]++
	pod := testpod.New(name).NS("ns").UID("uid-"+name).App("c", testpod.GPU(1), testpod.Mem(m.need[g])).
		Annotate("gpuadmit.io/gang", fmt.Sprintf("g%d", g)).Annotate("gpuadmit.io/gang-min-count", strconv.Itoa(m.size[g])).Build()
	if m.admit(pod, m.need[g]) {
		m.admitted[g]++
	}
}

func (m *gangModel) admitOrdinary() {
	m.ordinary++
	name := fmt.Sprintf("o-%d", m.ordinary)
	need := int64(512 * (1 + m.r.IntN(3)))
	m.admit(testpod.New(name).NS("ns").UID("uid-"+name).App("c", testpod.GPU(1), testpod.Mem(need)).Build(), need)
}

func (m *gangModel) admit(pod *corev1.Pod, need int64) bool {
	i := m.r.IntN(2)
	res, err := admitMember(m.t.Context(), m.stores[i], m.ledg[i], pod, m.limit, need)
	if err != nil {
		m.t.Fatal(err)
	}
	if res.Allowed {
		m.pending = append(m.pending, pod)
		m.demand[pod.UID] = need
	}
	return res.Allowed
}

// record has both watches record an admitted pod.
func (m *gangModel) record() {
	if len(m.pending) == 0 {
		return
	}
	i := m.r.IntN(len(m.pending))
	pod := m.pending[i].DeepCopy()
	m.pending = append(m.pending[:i], m.pending[i+1:]...)
	m.rv++
	pod.ResourceVersion = strconv.FormatUint(m.rv, 10)
	for j := range m.ledg {
		m.ledg[j].UpsertPod(pod)
		m.watch[j].rv.Store(m.rv)
	}
	m.recorded = append(m.recorded, pod)
}

// end deletes a recorded pod whose reservation is gone.
func (m *gangModel) end() {
	u := &gpuadmitv1.GPUReservationSet{}
	_ = m.c.Get(m.t.Context(), client.ObjectKey{Namespace: "ns", Name: gpuadmitv1.ObjectName}, u)
	st := u.Status
	for i, pod := range m.recorded {
		if !reserved(st, pod.UID) {
			m.recorded = append(m.recorded[:i], m.recorded[i+1:]...)
			m.rv++
			for j := range m.ledg {
				m.ledg[j].DeletePod(pod)
				m.watch[j].rv.Store(m.rv)
			}
			return
		}
	}
}

func reserved(st gpuadmitv1.GPUReservationSetStatus, uid types.UID) bool {
	for _, r := range st.Reservations {
		if r.PodUID == uid {
			return true
		}
	}
	return false
}

func (m *gangModel) check(at string) {
	u := &gpuadmitv1.GPUReservationSet{}
	_ = m.c.Get(m.t.Context(), client.ObjectKey{Namespace: "ns", Name: gpuadmitv1.ObjectName}, u)
	for i, l := range m.ledg {
		snap := l.Namespace("ns", reservation.Countable(u.Status, m.watch[i].PodsResourceVersion()))
		got := snap.Used.Of("nvidia").MemMiB + snap.Reserved.Of("nvidia").MemMiB
		if got > m.limit {
			m.t.Fatalf("%s: replica %d counts %d MiB, over the %d MiB limit", at, i, got, m.limit)
		}
		if want := m.recount(l, u.Status); got != want {
			m.t.Fatalf("%s: replica %d counts %d MiB, a recount %d MiB (%+v)", at, i, got, want, u.Status)
		}
	}
}

// recount is what the namespace holds, from scratch: the recorded pods'
// demand, the reservations of pods not recorded, every hold's slots.
func (m *gangModel) recount(l *ledger.Ledger, st gpuadmitv1.GPUReservationSetStatus) int64 {
	var n int64
	for _, pod := range m.recorded {
		n += m.demand[pod.UID]
	}
	for _, r := range st.Reservations {
		if l.Seen(r.PodUID) == "" {
			n += r.Demand.GPUMem
		}
	}
	for _, h := range st.Gangs {
		n += int64(h.Slots) * h.Demand.GPUMem
	}
	return n
}

// checkWhole: every gang has no pod admitted, or its admitted pods and the
// slots its hold still holds make the whole gang.
func (m *gangModel) checkWhole(at string) {
	u := &gpuadmitv1.GPUReservationSet{}
	_ = m.c.Get(m.t.Context(), client.ObjectKey{Namespace: "ns", Name: gpuadmitv1.ObjectName}, u)
	st := u.Status
	for g := range m.size {
		slots := 0
		for _, h := range st.Gangs {
			if h.Name == fmt.Sprintf("g%d", g) {
				slots = int(h.Slots)
			}
		}
		if m.admitted[g] != 0 && m.admitted[g]+slots != m.size[g] {
			m.t.Fatalf("%s: gang %d has %d of its %d pods admitted and %d slots held", at, g, m.admitted[g], m.size[g], slots)
		}
	}
}
