package admitqueue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/gang"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// fakeGroups are the PodGroups a test's informer holds.
type fakeGroups struct {
	mu      sync.Mutex
	groups  map[string]gang.Group
	deleted map[types.UID]bool
	err     error
}

func newGroups(gs ...gang.Group) *fakeGroups {
	f := &fakeGroups{groups: map[string]gang.Group{}, deleted: map[types.UID]bool{}}
	for _, g := range gs {
		f.put(g)
	}
	return f
}

func (f *fakeGroups) put(g gang.Group) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g.Namespace = "ns"
	f.groups[g.Name] = g
}

func (f *fakeGroups) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted[f.groups[name].UID] = true
	delete(f.groups, name)
}

func (f *fakeGroups) Get(ns, name string) (gang.Group, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return gang.Group{}, false, f.err
	}
	g, ok := f.groups[name]
	return g, ok && ns == "ns", nil
}

func (f *fakeGroups) Deleted(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deleted[uid]
}

// warned records the Warning Events.
type warned struct {
	mu     sync.Mutex
	events []string // "Kind/name reason: message"
}

func (w *warned) Warn(_ context.Context, ref corev1.ObjectReference, reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, ref.Kind+"/"+ref.Name+" "+reason+": "+message)
}

func (w *warned) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.events...)
}

// newGangStore is replica's store on c reading groups (nil: the PodGroup
// API not served), recording Events in the returned *warned.
func newGangStore(t *testing.T, c client.Client, replica string, groups *fakeGroups, opts Options) (*Store, *ledger.Ledger, *fakeWatch, *clocktesting.FakeClock, *warned) {
	t.Helper()
	s, l, w, clk := newStoreWith(t, c, replica, opts)
	ev := &warned{}
	s.events = ev
	if groups != nil {
		s.groups = groups
	}
	return s, l, w, clk, ev
}

func gangOpts() Options {
	return Options{ConfirmAfter: time.Hour, RecheckMax: time.Hour, ReadsPerSecond: 10, HoldTimeout: 5 * time.Minute,
		Clock: clocktesting.NewFakeClock(time.Unix(1000, 0))}
}

// member builds a pod of a gang: group names its PodGroup ("" for
// none); annotations are set as given (key, value, ...).
func member(name, group string, annotations ...string) *corev1.Pod {
	b := testpod.New(name).NS("ns").UID("uid-"+name).App("c", testpod.GPU(1), testpod.Mem(1024))
	for i := 0; i+1 < len(annotations); i += 2 {
		b = b.Annotate(annotations[i], annotations[i+1])
	}
	p := b.Build()
	if group != "" {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	}
	return p
}

// annotated is pod name of annotation gang g of n pods.
func annotated(name, g, n string) *corev1.Pod {
	return member(name, "", gang.NameAnnotation, g, gang.MinCountAnnotation, n)
}

// admitMember admits pod through s, each pod needing need MiB of a
// limit MiB quota (as the built-in limit decides).
func admitMember(ctx context.Context, s *Store, l *ledger.Ledger, pod *corev1.Pod, limit, need int64) (decision.Result, error) {
	f := limitDecider(l, limit, need)
	return s.Admit(context.WithValue(ctx, decideKey{}, f), pod.UID, decision.Request{Pod: pod, Namespace: "ns"})
}

// limitDecider decides like the built-in limit, with the denial's message.
func limitDecider(l *ledger.Ledger, limit, need int64) decideFn {
	return func(req decision.Request) (verdict, error) {
		snap := l.Namespace("ns", req.Reservations)
		used, reserved := snap.Used.Of("nvidia"), snap.Reserved.Of("nvidia")
		if used.MemMiB+reserved.MemMiB+need > limit {
			return verdict{Demand: vec(1, need), Denial: fmt.Sprintf("limits.nvidia.com/gpumem: %d MiB used, %d MiB reserved, %d MiB asked, limit %d MiB",
				used.MemMiB, reserved.MemMiB, need, limit)}, nil
		}
		return verdict{Reserve: true, Demand: vec(1, need)}, nil
	}
}

// heldMiB is what ns holds by the object as replica s counts it: its
// ledger's pods and the countable reservations and holds.
func heldMiB(t *testing.T, c client.Client, l *ledger.Ledger, podsRV string) int64 {
	t.Helper()
	u := &gpuadmitv1.GPUReservationSet{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: gpuadmitv1.ObjectName}, u); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	snap := l.Namespace("ns", reservation.Countable(u.Status, podsRV))
	return snap.Used.Of("nvidia").MemMiB + snap.Reserved.Of("nvidia").MemMiB
}

// holdOf returns ns's hold of gang name (false: none).
func holdOf(t *testing.T, c client.Client, name string) (gpuadmitv1.GangHold, bool) {
	t.Helper()
	for _, h := range reservationSet(t, c, "ns").Status.Gangs {
		if h.Name == name {
			return h, true
		}
	}
	return gpuadmitv1.GangHold{}, false
}
