package ledger

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

const hamiDRA = "hami-core-gpu.project-hami.io"

func newClaimLedger(t testing.TB) *Ledger {
	t.Helper()
	fams := []effective.Family{effective.Nvidia()}
	ch, err := dra.NewCharger([]dra.Class{{Name: hamiDRA, Family: nvidia, Mode: dra.ModeCapacity, Driver: hamiDRA,
		MemoryCapacity: "memory", CoresCapacity: "cores"}}, fams)
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Families: fams, Claims: ch})
}

// hamiClaim is a claim as HAMi-DRA's webhook builds it (memory in bytes).
func hamiClaim(ns, name, uid string, count, memMiB int64) *resourcev1.ResourceClaim {
	c := testclaim.HAMiDRA(ns, name, count, memMiB, 0)
	c.UID, c.ResourceVersion = types.UID(uid), "7"
	return c
}

func TestClaimLifecycle(t *testing.T) {
	l := newClaimLedger(t)
	c := hamiClaim("ns", "c1", "u1", 2, 4096)
	l.UpsertClaim(c)
	s := l.Namespace("ns", nil)
	if !same(s.Used, nv(2, 8192, 0)) || s.Claims != 1 {
		t.Fatalf("after add: used %s, %d claims; want 2 GPUs 8192 MiB, 1 claim", s.Used, s.Claims)
	}
	// A reservation under the claim's UID does not count once the claim is recorded (charged once).
	if s := l.Namespace("ns", []reservation.Reservation{{UID: "u1", Name: reservation.ClaimKey("c1"), Demand: nv(2, 8192, 0)}}); s.Reservations != 0 {
		t.Fatalf("the recorded claim's reservation counted: reserved %s", s.Reserved)
	}
	// A pod named like the claim is another object: its reservation counts.
	if s := l.Namespace("ns", []reservation.Reservation{{UID: "p1", Name: "c1", Demand: nv(1, 1, 0)}}); s.Reservations != 1 {
		t.Fatalf("a pod named like a claim is shadowed by the claim")
	}
	// The same event again (a resync) changes nothing.
	l.UpsertClaim(c)
	if s := l.Namespace("ns", nil); !same(s.Used, nv(2, 8192, 0)) || s.Claims != 1 {
		t.Fatalf("after resync: used %s, %d claims", s.Used, s.Claims)
	}
	l.DeleteClaim("ns", "c1")
	if s := l.Namespace("ns", nil); !s.Used.IsZero() || s.Claims != 0 {
		t.Fatalf("after delete: used %s, %d claims", s.Used, s.Claims)
	}
	if l.Seen("u1") != "" {
		t.Fatal("a deleted claim is still seen")
	}
}

func TestClaimNeverLowerWithoutAllocation(t *testing.T) {
	l := newClaimLedger(t)
	l.UpsertClaim(hamiClaim("ns", "c1", "u1", 1, 8192))
	// An update that reads lower (here, a hostile rewrite; a claim's spec is immutable) keeps the charge.
	l.UpsertClaim(hamiClaim("ns", "c1", "u1", 1, 1024))
	if s := l.Namespace("ns", nil); !same(s.Used, nv(1, 8192, 0)) {
		t.Fatalf("used %s, want the first charge (1 GPU, 8192 MiB)", s.Used)
	}
}

func TestClaimUngovernedAndInvalid(t *testing.T) {
	l := newClaimLedger(t)
	other := hamiClaim("ns", "fpga", "u2", 1, 1)
	other.Spec.Devices.Requests[0].Exactly.DeviceClassName = "fpga.example.com"
	l.UpsertClaim(other)
	bad := hamiClaim("ns", "bad", "u3", 1, 1)
	bad.Spec.Devices.Requests[0].Exactly.Capacity.Requests["memory"] = resource.MustParse("-5")
	l.UpsertClaim(bad)
	s := l.Namespace("ns", nil)
	if !s.Used.IsZero() {
		t.Fatalf("used %s, want nothing", s.Used)
	}
	if len(s.Problems) != 1 || s.Problems[0].Kind != ProblemClaim || s.Problems[0].Name != "bad" {
		t.Fatalf("problems %v, want one for claim bad", s.Problems)
	}
	l.DeleteClaim("ns", "bad")
	if s := l.Namespace("ns", nil); len(s.Problems) != 0 || s.Claims != 0 {
		t.Fatalf("after deleting the invalid claim: %v, %d claims", s.Problems, s.Claims)
	}
}

// TestClaimsModel: random adds, resyncs and deletes of claims beside pods;
// the ledger always equals a recount of the live objects.
func TestClaimsModel(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		l := newClaimLedger(t)
		live := map[string]*resourcev1.ResourceClaim{}
		pods := map[string]*corev1.Pod{}
		for step := range 200 {
			name := fmt.Sprintf("c%d", r.IntN(8))
			switch r.IntN(4) {
			case 0, 1:
				c := live[name]
				if c == nil {
					c = hamiClaim(fmt.Sprintf("ns%d", r.IntN(2)), name, fmt.Sprintf("%s-%d", name, step), 1+r.Int64N(2), 1+r.Int64N(4096))
					live[name] = c
				}
				l.UpsertClaim(c)
			case 2:
				if c := live[name]; c != nil {
					l.DeleteClaim(c.Namespace, c.Name)
					delete(live, name)
				}
			case 3:
				p := testpod.New("p"+name).NS("team-a").UID("p-"+name).App("app", gpu(1), mem(1000)).Build()
				pods[name] = p
				l.UpsertPod(p)
			}
			want := newClaimLedger(t)
			for _, c := range live {
				want.UpsertClaim(c)
			}
			for _, p := range pods {
				want.UpsertPod(p)
			}
			for _, ns := range []string{"ns0", "ns1", "team-a"} {
				got, exp := l.Namespace(ns, nil), want.Namespace(ns, nil)
				if !got.Used.Equal(exp.Used) || got.Claims != exp.Claims {
					t.Fatalf("seed %d step %d %s: ledger %s (%d claims), recount %s (%d claims)", seed, step, ns, got.Used, got.Claims, exp.Used, exp.Claims)
				}
			}
		}
	}
}
