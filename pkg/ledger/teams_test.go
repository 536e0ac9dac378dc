package ledger

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// userAnnotation is where the tests' Users read a pod's (or claim's) user.
const userAnnotation = "test/user"

// annotatedUsers reads userAnnotation (pkg/stamp verifies a signed stamp).
type annotatedUsers struct{}

func (annotatedUsers) UserOf(p *corev1.Pod) string { return p.Annotations[userAnnotation] }
func (annotatedUsers) ClaimUserOf(c *resourcev1.ResourceClaim) string {
	return c.Annotations[userAnnotation]
}

func newTeamLedger(t testing.TB) *Ledger {
	t.Helper()
	fams := []effective.Family{effective.Nvidia()}
	ch, err := dra.NewCharger([]dra.Class{{Name: hamiDRA, Family: nvidia, Mode: dra.ModeCapacity, Driver: hamiDRA,
		MemoryCapacity: "memory", CoresCapacity: "cores"}}, fams)
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Families: fams, Claims: ch, Users: annotatedUsers{}})
}

// team is a GPUClusterQuota selecting by label team=<sel> (sel "": no
// selector) and by name.
func team(name, sel string, hard, perUser map[string]string, names ...string) *gpuadmitv1.GPUClusterQuota {
	q := &gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{Namespaces: names, Hard: list(hard), PerUser: list(perUser)}}
	if sel != "" {
		q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": sel}}
	}
	return q
}

func list(m map[string]string) corev1.ResourceList {
	if m == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// userPod is a pending pod of user with n GPUs of 1024 MiB each.
func userPod(ns, name, user string, n int64) *corev1.Pod {
	return testpod.New(name).NS(ns).UID(ns+"/"+name).RV("1").Annotate(userAnnotation, user).App("c", gpu(n), mem(1024)).Build()
}

func TestClusterQuotaParsedLikeAResourceQuota(t *testing.T) {
	l := newTeamLedger(t)
	l.UpsertClusterQuota(team("ml", "ml",
		map[string]string{"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpumem": "48Gi", "limits.nvidia.com/gpucores": "1.5",
			"requests.nvidia.com/gpu": "4", "limits.example.com/fpga": "1", "pods": "10"},
		map[string]string{"limits.nvidia.com/gpu": "-1", "limits.cpu": "4"}))
	q, ok := l.ClusterQuota("ml")
	if !ok {
		t.Fatal("the team quota is not recorded")
	}
	lim, per := q.Limits[nvidia], q.PerUser[nvidia]
	if lim.GPU == nil || lim.GPU.Value != 4 || lim.GPU.Quota != "ml" || lim.GPU.Key != "limits.nvidia.com/gpu" {
		t.Errorf("hard GPU limit %+v; want 4 of ml, limits.nvidia.com/gpu", lim.GPU)
	}
	if lim.MemMiB == nil || lim.MemMiB.Value != 48*1024 {
		t.Errorf("hard memory limit %+v; want 48Gi read as 49152 MiB", lim.MemMiB)
	}
	if lim.Cores == nil || lim.Cores.Value != 1 {
		t.Errorf("hard cores limit %+v; want 1.5 rounded down to 1", lim.Cores)
	}
	// A negative per-user limit blocks (never read as unlimited).
	if per.GPU == nil || per.GPU.Value != 0 || !per.GPU.Invalid {
		t.Errorf("per-user GPU limit %+v; want an invalid limit blocking at 0", per.GPU)
	}
	var keys []string
	for _, p := range q.Problems {
		keys = append(keys, p.Key)
		if p.Name != "ml" || p.Namespace != "" || p.Message == "" {
			t.Errorf("problem %+v: want it to name the GPUClusterQuota ml with a message", p)
		}
	}
	for _, want := range []string{"limits.nvidia.com/gpumem", "limits.nvidia.com/gpucores", "requests.nvidia.com/gpu",
		"limits.example.com/fpga", "pods", "perUser limits.nvidia.com/gpu", "perUser limits.cpu"} {
		if !slices.Contains(keys, want) {
			t.Errorf("problems %v: want one for %q (nothing a quota says is dropped silently)", keys, want)
		}
	}
	if slices.Contains(keys, "limits.nvidia.com/gpu") {
		t.Errorf("problems %v: a whole GPU limit is enforced as written", keys)
	}
}

func TestClusterQuotaBadSelectorSelectsByNameOnly(t *testing.T) {
	l := newTeamLedger(t)
	l.UpsertNamespace(testns.New("ml-dev", map[string]string{"team": "ml"}))
	q := team("ml", "", map[string]string{"limits.nvidia.com/gpu": "1"}, nil, "named")
	q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}
	l.UpsertClusterQuota(q)
	tq, _ := l.ClusterQuota("ml")
	if !slices.ContainsFunc(tq.Problems, func(p Problem) bool { return p.Key == SelectorKey }) {
		t.Errorf("problems %v: want the unusable selector reported", tq.Problems)
	}
	if got := l.Selected("ml"); !slices.Equal(got, []string{"named"}) {
		t.Errorf("Selected = %v; want [named]", got)
	}
}

func TestTeamsOfFollowsLabelsAndNames(t *testing.T) {
	l := newTeamLedger(t)
	l.UpsertNamespace(testns.New("ml-dev", map[string]string{"team": "ml"}))
	l.UpsertNamespace(testns.New("ml-train", map[string]string{"team": "ml"}))
	l.UpsertNamespace(testns.New("web", nil))
	l.UpsertClusterQuota(team("ml", "ml", map[string]string{"limits.nvidia.com/gpu": "4"}, nil, "shared"))
	l.UpsertClusterQuota(team("all", "", map[string]string{"limits.nvidia.com/gpu": "40"}, nil, "ml-dev", "web"))
	names := func(qs []TeamQuota) []string {
		var out []string
		for _, q := range qs {
			out = append(out, q.Name)
		}
		return out
	}
	for ns, want := range map[string][]string{"ml-dev": {"all", "ml"}, "ml-train": {"ml"}, "web": {"all"}, "shared": {"ml"}, "other": nil} {
		if got := names(l.TeamsOf(ns)); !slices.Equal(got, want) {
			t.Errorf("TeamsOf(%s) = %v; want %v", ns, got, want)
		}
	}
	if got := l.Selected("ml"); !slices.Equal(got, []string{"ml-dev", "ml-train", "shared"}) {
		t.Errorf("Selected(ml) = %v", got)
	}
	// Relabelled out: no longer selected (the departure's grace is the
	// admission queue's, from the team object).
	l.UpsertNamespace(testns.New("ml-train", map[string]string{"team": "web"}))
	if got := names(l.TeamsOf("ml-train")); got != nil {
		t.Errorf("TeamsOf(ml-train) after relabelling = %v; want none", got)
	}
	l.DeleteClusterQuota("ml")
	if got := names(l.TeamsOf("ml-dev")); !slices.Equal(got, []string{"all"}) {
		t.Errorf("TeamsOf(ml-dev) after deleting ml = %v", got)
	}
	if got := l.Selected("ml"); got != nil {
		t.Errorf("Selected of a deleted quota = %v", got)
	}
}

// TestTeamSumsMembersAndUsers: a team's usage is its members' together,
// each user's part by the user each pod was first recorded with; an edit
// of the pod's user annotation never moves its charge, and a reservation
// counts until its pod is recorded, never twice.
func TestTeamSumsMembersAndUsers(t *testing.T) {
	l := newTeamLedger(t)
	l.UpsertClusterQuota(team("ml", "", map[string]string{"limits.nvidia.com/gpu": "8"}, nil, "ml-dev", "ml-train"))
	q, _ := l.ClusterQuota("ml")
	l.UpsertPod(userPod("ml-dev", "a1", "alice", 1))
	l.UpsertPod(userPod("ml-train", "a2", "alice", 2))
	l.UpsertPod(userPod("ml-train", "b1", "bob", 1))
	l.UpsertPod(userPod("web", "w1", "alice", 4)) // not a member
	members := l.Selected("ml")
	s := l.Team(q, members, nil, "alice")
	if s.Used.Of(nvidia).GPU != 4 || s.UserUsed.Of(nvidia).GPU != 3 {
		t.Fatalf("team used %s, alice %s; want 4 and 3 GPUs", s.Used, s.UserUsed)
	}
	// alice writes bob's name on her running pod: the charge stays hers.
	edited := userPod("ml-train", "a2", "bob", 2)
	edited.ResourceVersion = "2"
	l.UpsertPod(edited)
	if s := l.Team(q, members, nil, "alice"); s.UserUsed.Of(nvidia).GPU != 3 {
		t.Fatalf("after the annotation edit alice's usage is %s; want 3 GPUs (a charge never moves)", s.UserUsed)
	}
	if s := l.Team(q, members, nil, "bob"); s.UserUsed.Of(nvidia).GPU != 1 {
		t.Fatalf("after the annotation edit bob's usage is %s; want 1 GPU", s.UserUsed)
	}
	// Reservations: one of alice's pod not recorded yet, one of bob's whose
	// pod is recorded (not counted again), one unconfirmed in ml-dev.
	pending := []reservation.Reservation{
		{UID: "ml-dev/a3", Name: "a3", Namespace: "ml-dev", User: "alice", Demand: effective.UsageOf(nvidia, vec(2, 2048, 0)), Unconfirmed: true},
		{UID: "ml-train/b1", Name: "b1", Namespace: "ml-train", User: "bob", Demand: effective.UsageOf(nvidia, vec(1, 1024, 0))},
		{UID: "ml-train/b2", Name: "b2", Namespace: "ml-train", User: "bob", Demand: effective.UsageOf(nvidia, vec(1, 1024, 0))},
	}
	s = l.Team(q, members, pending, "alice")
	if s.Reserved.Of(nvidia).GPU != 3 || s.Unconfirmed.Of(nvidia).GPU != 2 || s.UserReserved.Of(nvidia).GPU != 2 || s.UserUnconfirmed.Of(nvidia).GPU != 2 {
		t.Fatalf("reserved %s (unconfirmed %s), alice's %s (%s); want 3 (2), 2 (2)", s.Reserved, s.Unconfirmed, s.UserReserved, s.UserUnconfirmed)
	}
	// The pod is recorded: its reservation stops counting, its charge counts once.
	l.UpsertPod(userPod("ml-dev", "a3", "alice", 2))
	s = l.Team(q, members, pending, "alice")
	if s.Used.Of(nvidia).GPU != 6 || s.Reserved.Of(nvidia).GPU != 1 || s.UserUsed.Of(nvidia).GPU != 5 || s.UserReserved.Of(nvidia).GPU != 0 {
		t.Fatalf("after a3 is recorded: used %s reserved %s, alice %s/%s; want 6/1, 5/0", s.Used, s.Reserved, s.UserUsed, s.UserReserved)
	}
	l.DeletePod(userPod("ml-dev", "a1", "alice", 1))
	if s := l.Team(q, members, nil, "alice"); s.UserUsed.Of(nvidia).GPU != 4 || s.Used.Of(nvidia).GPU != 5 {
		t.Fatalf("after deleting a1: team %s, alice %s; want 5 and 4", s.Used, s.UserUsed)
	}
}

// TestClaimChargedToItsFirstUser: a claim's charge is its first user's,
// whatever a later edit of the claim says.
func TestClaimChargedToItsFirstUser(t *testing.T) {
	l := newTeamLedger(t)
	c := hamiClaim("ml-dev", "c1", "cu1", 1, 2048)
	c.Annotations = map[string]string{userAnnotation: "alice"}
	l.UpsertClaim(c)
	c2 := c.DeepCopy()
	c2.Annotations[userAnnotation], c2.ResourceVersion = "bob", "8"
	l.UpsertClaim(c2)
	q := TeamQuota{Name: "ml"}
	if s := l.Team(q, []string{"ml-dev"}, nil, "alice"); s.UserUsed.Of(nvidia).GPU != 1 {
		t.Fatalf("alice's usage %s; want her claim's 1 GPU", s.UserUsed)
	}
	if s := l.Team(q, []string{"ml-dev"}, nil, "bob"); !s.UserUsed.IsZero() {
		t.Fatalf("bob's usage %s; want none", s.UserUsed)
	}
	if ch := l.Charges("ml-dev"); len(ch) != 1 || ch[0].User != "alice" {
		t.Fatalf("charges %+v; want the claim charged to alice", ch)
	}
	l.DeleteClaim("ml-dev", "c1")
	if u := l.UserUsage("ml-dev"); len(u) != 0 {
		t.Fatalf("per-user usage after the claim's deletion: %v", u)
	}
}

func TestTeamWithoutUsersChargesTheEmptyUser(t *testing.T) {
	l := newLedger(t) // no Options.Users
	l.UpsertPod(userPod("ml-dev", "a1", "alice", 1))
	s := l.Team(TeamQuota{Name: "ml"}, []string{"ml-dev"}, nil, "alice")
	if s.Used.Of(nvidia).GPU != 1 || !s.UserUsed.IsZero() {
		t.Fatalf("used %s, alice %s; want 1 GPU, alice none (no Users: every charge is the empty user's)", s.Used, s.UserUsed)
	}
	if u := l.UserUsage("ml-dev"); len(u) != 1 || u[""].Of(nvidia).GPU != 1 {
		t.Fatalf("per-user usage %v; want the empty user's 1 GPU", u)
	}
}
