package admitqueue

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// These tests drive the store with controller-runtime's fake client, which
// keeps resourceVersions and refuses stale writes like the API server does;
// tests/ha runs the same code on a real one with three replicas.

type fakeWatch struct {
	rv atomic.Uint64
	// waiting, when set, is told (without blocking) each time WaitForPods
	// starts to wait.
	waiting chan struct{}
}

func (w *fakeWatch) PodsResourceVersion() string {
	if v := w.rv.Load(); v > 0 {
		return strconv.FormatUint(v, 10)
	}
	return ""
}

func (w *fakeWatch) WaitForPods(ctx context.Context, rv string) error {
	want, _ := strconv.ParseUint(rv, 10, 64)
	if w.rv.Load() < want && w.waiting != nil {
		select {
		case w.waiting <- struct{}{}:
		default:
		}
	}
	for w.rv.Load() < want {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// fakeMembers is a replica's view of the others: their pod-watch progress
// by name ("": published none); every namespace is this replica's.
type fakeMembers struct {
	watch *fakeWatch

	mu      sync.Mutex
	others  map[string]string
	suspect time.Time
	hurried atomic.Int64 // calls of Hurry
}

func (m *fakeMembers) MinLive() (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	least := m.watch.PodsResourceVersion()
	for _, rv := range m.others {
		if rv == "" {
			return "", false
		}
		least = resourceversion.Min(least, rv)
	}
	return least, least != ""
}

func (m *fakeMembers) Owner(string) (string, bool) { return "", true }

func (m *fakeMembers) SuspectSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.suspect
}

func (m *fakeMembers) Now() time.Time { return time.Now() }

func (m *fakeMembers) Hurry() { m.hurried.Add(1) }

func (m *fakeMembers) set(replica, progress string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.others[replica] = progress
}

// counted records what the store counts.
type counted struct {
	mu                sync.Mutex
	refused, ended    []string
	conflicts, writes atomic.Int64
	causes            []string // of the conflicts
}

func (c *counted) Refused(r string) { c.mu.Lock(); c.refused = append(c.refused, r); c.mu.Unlock() }
func (c *counted) Ended(r string)   { c.mu.Lock(); c.ended = append(c.ended, r); c.mu.Unlock() }
func (c *counted) Conflict(cause string) {
	c.mu.Lock()
	c.causes = append(c.causes, cause)
	c.mu.Unlock()
	c.conflicts.Add(1)
}
func (c *counted) Wrote(time.Duration, int) {
	c.writes.Add(1)
}

func (c *counted) list(of *[]string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(*of, ",")
}

// verdict is what a test's decision says of one review: allowed with
// Demand (Reserve), or denied (Wait: it would fit without the unconfirmed
// reservations).
type verdict struct {
	Reserve bool
	Demand  effective.Usage
	Wait    bool
	// Denial is a denied review's message (optional).
	Denial string
}

// decideFn decides one review of a test; admitPod hands it to the store's
// decider in the review's context.
type decideFn func(req decision.Request) (verdict, error)

type decideKey struct{}

// testDecider runs the decideFn of the review's context.
type testDecider struct{}

func (testDecider) Decide(ctx context.Context, req decision.Request) (decision.Result, error) {
	v, err := ctx.Value(decideKey{}).(decideFn)(req)
	if err != nil {
		return decision.Result{}, err
	}
	res := decision.Result{Allowed: v.Reserve, Effective: v.Demand, Reserve: v.Demand, FitsWithoutUnconfirmed: v.Wait}
	if v.Denial != "" {
		res.Denials = []string{v.Denial}
	}
	return res, nil
}

// admitPod admits pod ns/name (UID uid) through s, decided by f.
func admitPod(ctx context.Context, s *Store, ns string, uid types.UID, name string, f decideFn) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
	_, err := s.Admit(context.WithValue(ctx, decideKey{}, f), uid, decision.Request{Pod: pod, Namespace: ns})
	return err
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), gpuadmitv1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	return s
}

// newStore returns replica's store on c, its ledger, pod watch (at 1) and
// clock; s.members is a *fakeMembers and s.metrics a *counted.
func newStore(t *testing.T, c client.Client, replica string) (*Store, *ledger.Ledger, *fakeWatch, *clocktesting.FakeClock) {
	t.Helper()
	return newStoreWith(t, c, replica, Options{ConfirmAfter: time.Second, RecheckMax: 4 * time.Second, ReadsPerSecond: 10,
		Clock: clocktesting.NewFakeClock(time.Unix(1000, 0))})
}

func newStoreWith(t *testing.T, c client.Client, replica string, opts Options) (*Store, *ledger.Ledger, *fakeWatch, *clocktesting.FakeClock) {
	t.Helper()
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	w := &fakeWatch{}
	w.rv.Store(1)
	opts.Replica = replica
	s := NewStore(Parts{Client: c, API: c, Ledger: l, Watch: w, Members: &fakeMembers{watch: w, others: map[string]string{}},
		Decider: testDecider{}, Metrics: &counted{}}, opts)
	clk, _ := opts.Clock.(*clocktesting.FakeClock)
	return s, l, w, clk
}

func members(s *Store) *fakeMembers { return s.members.(*fakeMembers) }
func metrics(s *Store) *counted     { return s.metrics.(*counted) }

func fakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(scheme(t)).WithStatusSubresource(&gpuadmitv1.GPUUsage{}, &gpuadmitv1.GPUReservationSet{}).WithObjects(objs...).Build()
}

// usage reads ns's GPUReservationSet.
func usage(t *testing.T, c client.Client, ns string) *gpuadmitv1.GPUReservationSet {
	t.Helper()
	return reservationSet(t, c, ns)
}

func reservationSet(t *testing.T, c client.Client, ns string) *gpuadmitv1.GPUReservationSet {
	t.Helper()
	u := &gpuadmitv1.GPUReservationSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func vec(g, m int64) effective.Usage {
	return effective.UsageOf("nvidia", effective.Vector{GPU: g, MemMiB: m})
}
