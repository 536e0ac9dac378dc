package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/admitqueue"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// These fakes stand in for what surrounds the production reservation path
// (admitqueue.Store) in the burst test; none of them orders anything.

// reservationQuota decides like the real decision does, from the
// reservations the store hands it in the request (req.Reservations) and a
// demand computed from the pod; it holds no state and no lock, so any
// ordering of the reviews is the store's.
type reservationQuota struct{ limit int64 }

func (q reservationQuota) Decide(ctx context.Context, req decision.Request) (decision.Result, error) {
	dem, err := computeDemand{}.Demand(ctx, req.Pod)
	if err != nil || dem == nil {
		return decision.Result{Allowed: err == nil}, err
	}
	var held int64
	for _, r := range req.Reservations {
		held += r.Demand.Of("nvidia").MemMiB
	}
	eff := dem.Effective()
	if held+eff.Of("nvidia").MemMiB > q.limit {
		return decision.Result{Effective: eff, Denials: []string{"over the limit"}}, nil
	}
	return decision.Result{Allowed: true, Effective: eff, Reserve: eff}, nil
}

// staticWatch is a pod watch that synced at resourceVersion 1.
type staticWatch struct{}

func (staticWatch) PodsResourceVersion() string               { return "1" }
func (staticWatch) WaitForPods(context.Context, string) error { return nil }

// aloneMembers is the view of a replica that runs alone.
type aloneMembers struct{}

func (aloneMembers) MinLive() (string, bool)     { return "1", true }
func (aloneMembers) Owner(string) (string, bool) { return "", true }
func (aloneMembers) SuspectSince() time.Time     { return time.Time{} }
func (aloneMembers) Now() time.Time              { return time.Unix(1000, 0) }
func (aloneMembers) Hurry()                      {}

// TestValidatorBurst: 200 concurrent creates of 1 GiB pods into a
// namespace with 20 GiB of quota, through the Validator and the production
// reservation path (admitqueue.Store on controller-runtime's fake client,
// which refuses stale writes like the API server and orders nothing
// itself; the decider is stateless): exactly 20 are admitted and exactly
// 20 reservations are held. The store's ordering of a namespace's reviews
// and its compare-and-swap write are what keep it exact.
func TestValidatorBurst(t *testing.T) {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), gpuadmitv1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&gpuadmitv1.GPUReservationSet{}).Build()
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	store := admitqueue.NewStore(admitqueue.Parts{Client: c, API: c, Ledger: l, Watch: staticWatch{}, Members: aloneMembers{},
		Decider: reservationQuota{limit: 20 * 1024}}, admitqueue.Options{Replica: "a", ConfirmAfter: time.Hour, RecheckMax: time.Hour,
		ReadsPerSecond: 10, Clock: clock.RealClock{}})
	v := &Validator{GPUPods: gpuPodsOf{}, Reserver: store}
	var allowed, denied atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			pod := testpod.New(fmt.Sprintf("p%d", i)).NS("team-a").UID(fmt.Sprintf("u%d", i)).
				App("c", testpod.GPU(1), testpod.Mem(1024)).Build()
			if resp := v.Handle(t.Context(), review(t, admissionv1.Create, pod, false)); resp.Allowed {
				allowed.Add(1)
			} else {
				denied.Add(1)
			}
		})
	}
	wg.Wait()
	u := &gpuadmitv1.GPUReservationSet{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: gpuadmitv1.ObjectName}, u); err != nil {
		t.Fatal(err)
	}
	if allowed.Load() != 20 || denied.Load() != 180 || len(u.Status.Reservations) != 20 {
		t.Fatalf("allowed %d, denied %d, reservations held %d; want 20, 180, 20", allowed.Load(), denied.Load(), len(u.Status.Reservations))
	}
}

// gpuPodsOf tells nvidia pods from the others.
type gpuPodsOf struct{}

func (gpuPodsOf) Requests(pod *corev1.Pod) bool { return effective.Nvidia().Requests(pod) }
