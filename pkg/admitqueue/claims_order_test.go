package admitqueue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/policy"
)

// These tests attack issue 42's claim holes through the path production
// takes: the real decider (the built-in policies) over a real ledger, each
// review reserved by the store in the namespace's GPUReservationSet, each
// object recorded by the ledger as its watch would deliver it.

const claimLimit = 16384 // MiB of limits.nvidia.com/gpumem

// claimWorld is one replica deciding and reserving.
type claimWorld struct {
	t     *testing.T
	store *Store
	l     *ledger.Ledger
	watch *fakeWatch
	// ns is the namespace of the scenario played; admitted the MiB its
	// allowed reviews admitted (what each object will hold).
	ns       string
	admitted int64
}

// claimLedger is a ledger of the default configuration's families and
// DeviceClasses knowing a 24 GiB node.
func claimLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	cfg := config.Default()
	fams := config.Families(cfg)
	ch, err := dra.NewCharger(config.DeviceClasses(cfg), fams)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(ledger.Options{Families: fams, Claims: ch, Log: logr.Discard()})
	l.UpsertNode(testnode.WithGPUs("n1", nil, 24576))
	return l
}

// scenario starts a scenario in a new namespace ns, limited to claimLimit.
func (w *claimWorld) scenario(ns string) {
	testns.Known(w.l, ns)
	w.l.UpsertQuota(testquota.New(ns, "q", map[string]string{"limits.nvidia.com/gpumem": fmt.Sprint(claimLimit)}))
	w.ns, w.admitted = ns, 0
}

func newClaimWorld(t *testing.T, engine *policy.Engine) *claimWorld {
	t.Helper()
	l := claimLedger(t)
	d, err := decision.New(engine, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	c := fakeClient(t)
	w := &fakeWatch{}
	w.rv.Store(1)
	s := NewStore(Parts{Client: c, API: c, Ledger: l, Watch: w, Members: &fakeMembers{watch: w, others: map[string]string{}},
		Decider: d, Metrics: &counted{}}, Options{Replica: "a", ConfirmAfter: time.Second, RecheckMax: 4 * time.Second, ReadsPerSecond: 10,
		Clock: clocktesting.NewFakeClock(time.Unix(1000, 0))})
	cw := &claimWorld{t: t, store: s, l: l, watch: w}
	cw.scenario("ns")
	return cw
}

// admit reviews a CREATE through the store; it reports whether it was
// allowed and adds what the object will hold to admitted.
func (w *claimWorld) admit(uid types.UID, req decision.Request, holds int64) bool {
	w.t.Helper()
	req.Namespace = w.ns
	res, err := w.store.Admit(context.Background(), uid, req)
	if err != nil {
		w.t.Fatalf("review %s: %v", uid, err)
	}
	if res.Allowed {
		w.admitted += holds
	}
	return res.Allowed
}

// check asserts the invariants: what was admitted fits the limit, and so
// does the ledger's usage with the reservations it counts.
func (w *claimWorld) check(at string) {
	w.t.Helper()
	if w.admitted > claimLimit {
		w.t.Fatalf("%s: %d MiB admitted into a %d MiB limit", at, w.admitted, claimLimit)
	}
	u := &gpuadmitv1.GPUReservationSet{}
	if err := w.store.client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: gpuadmitv1.ObjectName}, u); client.IgnoreNotFound(err) != nil {
		w.t.Fatal(err)
	}
	s := w.l.Namespace(w.ns, reservation.Countable(u.Status, w.watch.PodsResourceVersion()))
	if got := s.Used.Of("nvidia").MemMiB + s.Reserved.Of("nvidia").MemMiB; got > claimLimit {
		w.t.Fatalf("%s: %d MiB used + %d MiB reserved, over the %d MiB limit", at, s.Used.Of("nvidia").MemMiB, s.Reserved.Of("nvidia").MemMiB, claimLimit)
	}
}

func claimEngine(t *testing.T) *policy.Engine {
	t.Helper()
	e := policy.New(policy.Options{})
	if err := e.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// templatedPod asks gpuMiB in its container (0: no GPU) and one claim of
// template tmpl.
func templatedPod(ns string, gpuMiB int64) *corev1.Pod {
	b := testpod.New("p").NS(ns).UID(ns + "-pod-uid").RV("5")
	if gpuMiB > 0 {
		b = b.App("app", testpod.GPU(1), testpod.Mem(gpuMiB))
	} else {
		b = b.App("app")
	}
	p := b.Build()
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("tmpl")}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return p
}

// podClaim is a claim "for" pod's claim gpu: the claim controller's, or a
// tenant's forgery with the same annotation and controller owner.
func podClaim(pod *corev1.Pod, name string, count, memMiB int64) *resourcev1.ResourceClaim {
	c := testclaim.GeneratedFor(testclaim.HAMiDRA(pod.Namespace, name, count, memMiB, 0), pod, "gpu")
	c.UID, c.ResourceVersion = types.UID(pod.Namespace+"-"+name+"-uid"), "9"
	return c
}

// TestClaimOrderings: for every order of the template's creation, the
// pod's review and record, the generated claim's review and record and a
// forged claim's review and record, what is admitted stays within the
// limit (4096 MiB of the pod's container + one 10240 MiB claim fit in
// 16384 MiB, two claims do not), and the ledger equals a recount.
func TestClaimOrderings(t *testing.T) {
	engine := claimEngine(t)
	events := []string{"template", "admit pod", "record pod", "admit gen", "record gen", "admit forged", "record forged"}
	n := 0
	w := newClaimWorld(t, engine)
	permute(events, func(order []string) {
		if !admitsFirst(order) {
			return
		}
		n++
		w.scenario(fmt.Sprintf("order-%d", n))
		runOrder(t, w, order)
	})
	if n != 630 {
		t.Fatalf("%d orderings run, want 630", n)
	}
}

// runOrder plays one ordering.
func runOrder(t *testing.T, w *claimWorld, order []string) {
	t.Helper()
	pod := templatedPod(w.ns, 4096)
	claims := map[string]*resourcev1.ResourceClaim{"gen": podClaim(pod, "p-gpu-x1", 1, 10240), "forged": podClaim(pod, "p-gpu-forged", 1, 10240)}
	allowed := map[string]bool{}
	var recorded []*resourcev1.ResourceClaim
	podRecorded := false
	for i, ev := range order {
		verb, what, _ := strings.Cut(ev, " ")
		switch {
		case ev == "template":
			w.l.UpsertTemplate(testclaim.Template(w.ns, "tmpl", testclaim.HAMiDRA(w.ns, "", 1, 10240, 0)))
		case ev == "admit pod":
			allowed["pod"] = w.admit(pod.UID, decision.Request{Pod: pod}, 4096)
		case ev == "record pod":
			if allowed["pod"] {
				w.l.UpsertPod(pod)
				podRecorded = true
			}
		case verb == "admit":
			c := claims[what]
			allowed[what] = w.admit(c.UID, decision.Request{Claim: c}, 10240)
		case verb == "record" && allowed[what]:
			w.l.UpsertClaim(claims[what])
			recorded = append(recorded, claims[what])
		}
		w.check(fmt.Sprintf("%v, step %d", order, i))
	}
	// Nothing is counted twice: a pod reviewed after its template and
	// before either claim is admitted, and so is the first claim (the pod
	// reserved its container's 4096 MiB, not its template's claim too).
	at := func(ev string) int { return slices.Index(order, ev) }
	if at("template") < at("admit pod") && at("admit pod") < min(at("admit gen"), at("admit forged")) {
		first := map[bool]string{true: "gen", false: "forged"}[at("admit gen") < at("admit forged")]
		if !allowed["pod"] || !allowed[first] {
			t.Fatalf("%v: allowed %v, want the pod and the first claim (%s)", order, allowed, first)
		}
	}
	recount := claimLedger(t)
	testns.Known(recount, w.ns)
	for _, c := range recorded {
		recount.UpsertClaim(c)
	}
	if podRecorded {
		recount.UpsertPod(pod)
	}
	if got, want := w.l.Namespace(w.ns, nil).Used, recount.Namespace(w.ns, nil).Used; !got.Equal(want) {
		t.Fatalf("%v: ledger %s, recount %s", order, got, want)
	}
}

// admitsFirst reports whether each object's review comes before its record.
func admitsFirst(order []string) bool {
	seen := map[string]bool{}
	for _, ev := range order {
		verb, what, _ := strings.Cut(ev, " ")
		if verb == "record" && !seen[what] {
			return false
		}
		if verb == "admit" {
			seen[what] = true
		}
	}
	return true
}

// permute calls f with every permutation of xs (Heap's algorithm).
func permute(xs []string, f func([]string)) {
	a := append([]string(nil), xs...)
	var gen func(k int)
	gen = func(k int) {
		if k == 1 {
			f(a)
			return
		}
		for i := 0; i < k; i++ {
			gen(k - 1)
			if k%2 == 0 {
				a[i], a[k-1] = a[k-1], a[i]
			} else {
				a[0], a[k-1] = a[k-1], a[0]
			}
		}
	}
	gen(len(a))
}

// TestIssue42TemplateAfterPod replays issue 42's 92 GiB: a pod naming a
// template that does not exist yet is admitted (nothing of its own to
// reserve), the template (3 × 10 GiB) is created and the pod touched; the
// generated claim and forged claims carrying the pod-claim-name annotation
// and a controller owner reference to the pod are each decided as any
// claim, and refused: nothing is used.
func TestIssue42TemplateAfterPod(t *testing.T) {
	w := newClaimWorld(t, claimEngine(t))
	pod := templatedPod("ns", 0)
	if !w.admit(pod.UID, decision.Request{Pod: pod}, 0) {
		t.Fatal("the pod naming a template that does not exist yet was denied")
	}
	w.l.UpsertPod(pod)
	w.l.UpsertTemplate(testclaim.Template("ns", "tmpl", testclaim.HAMiDRA("ns", "", 3, 10240, 0)))
	touched := pod.DeepCopy()
	touched.ResourceVersion, touched.Labels = "6", map[string]string{"touched": "1"}
	w.l.UpsertPod(touched)
	w.check("template created after the pod")
	for _, name := range []string{"p-gpu-x1", "p-gpu-forged-1", "p-gpu-forged-2"} {
		c := podClaim(pod, name, 3, 10240)
		if w.admit(c.UID, decision.Request{Claim: c}, 30720) {
			w.l.UpsertClaim(c)
			t.Fatalf("claim %s for 30720 MiB admitted into a %d MiB limit", name, claimLimit)
		}
		w.check("claim " + name)
	}
	if used := w.l.Namespace("ns", nil).Used.Of("nvidia").MemMiB; used != 0 {
		t.Fatalf("used %d MiB, want 0", used)
	}
	// A template that fits: its generated claim is admitted once; forgeries for the same pod claim are decided against it.
	w.l.UpsertTemplate(testclaim.Template("ns", "tmpl", testclaim.HAMiDRA("ns", "", 1, 10240, 0)))
	for i, name := range []string{"p-gpu-y1", "p-gpu-forged-3"} {
		c := podClaim(pod, name, 1, 10240)
		if got := w.admit(c.UID, decision.Request{Claim: c}, 10240); got != (i == 0) {
			t.Fatalf("claim %s admitted %v, want %v", name, got, i == 0)
		}
		w.check("claim " + name)
	}
}
