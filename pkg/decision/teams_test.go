package decision

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// testUser is where the tests' Users read who a pod is charged to.
const testUser = "test/user"

type annotatedUsers struct{}

func (annotatedUsers) UserOf(p *corev1.Pod) string                    { return p.Annotations[testUser] }
func (annotatedUsers) ClaimUserOf(c *resourcev1.ResourceClaim) string { return c.Annotations[testUser] }

// teamPod is a pod of user in ns asking for n GPUs of 1024 MiB.
func teamPod(ns, name, user string, n int64) *corev1.Pod {
	return testpod.New(name).NS(ns).UID(ns+"/"+name).RV("1").Annotate(testUser, user).App("c", testpod.GPU(n), testpod.Mem(1024)).Build()
}

// teamLedger knows ml-dev and ml-train (team=ml) and web, each with a
// ResourceQuota of 10 GPUs; GPUClusterQuota ml (label team=ml) limits
// them to 4 GPUs together and 2 per user; alice runs 2 GPUs and bob 1 in
// ml-train, and a departed namespace ml-old still holds 1 of alice's.
func teamLedger(t *testing.T) (*ledger.Ledger, ledger.TeamQuota) {
	t.Helper()
	l := ledger.New(ledger.Options{Families: config.Families(config.Default()), Log: logr.Discard(), Users: annotatedUsers{}})
	for ns, lbl := range map[string]string{"ml-dev": "ml", "ml-train": "ml", "web": "", "ml-old": "old"} {
		l.UpsertNamespace(testns.New(ns, map[string]string{"team": lbl}))
		l.UpsertQuota(testquota.New(ns, "q", map[string]string{"limits.nvidia.com/gpu": "10"}))
	}
	l.UpsertClusterQuota(&gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: "ml"},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			Hard:    corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("5")},
			PerUser: corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("3")}}})
	l.UpsertPod(teamPod("ml-train", "a1", "alice", 2))
	l.UpsertPod(teamPod("ml-train", "b1", "bob", 1))
	l.UpsertPod(teamPod("ml-old", "a0", "alice", 1))
	q, ok := l.ClusterQuota("ml")
	if !ok {
		t.Fatal("team quota not recorded")
	}
	return l, q
}

// TestTeamLimits attacks the team quota from every side: the team's other
// namespaces, a departed member, per-user limits, reservations of the team
// not recorded yet. The pod is admitted only when the team's usage +
// reserved + demand stays within every limit (5 GPUs for the team, 3 per
// user; 4 used with ml-old), whatever its namespace's quota allows.
func TestTeamLimits(t *testing.T) {
	l, q := teamLedger(t)
	members := append(l.Selected("ml"), "ml-old")
	d, err := New(loadedEngine(t), l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ghost := func(n int64, unconfirmed bool) []reservation.Reservation {
		return []reservation.Reservation{{UID: "ghost", Name: "ghost", Namespace: "ml-dev", User: "carol", Demand: gpus(n), Unconfirmed: unconfirmed}}
	}
	for _, tt := range []struct {
		name        string
		ns, user    string
		gpus        int64
		teams       bool
		reserved    []reservation.Reservation
		allowed     bool
		denial      string // a substring of the one denial
		fitsWithout bool
	}{
		{name: "within both", ns: "ml-dev", user: "bob", gpus: 1, teams: true, allowed: true},
		{name: "the team's other namespaces fill it", ns: "ml-dev", user: "carol", gpus: 2, teams: true,
			denial: `nvidia.com/gpu: pod needs 2, 4 used + 0 reserved in the team's namespaces, limit 5 (GPUClusterQuota "ml" limits.nvidia.com/gpu)`},
		{name: "the departed member still counts", ns: "ml-train", user: "bob", gpus: 2, teams: true,
			denial: `pod needs 2, 4 used + 0 reserved in the team's namespaces, limit 5 (GPUClusterQuota "ml"`},
		{name: "per user, counting alice's pods in every member", ns: "ml-dev", user: "alice", gpus: 1, teams: true,
			denial: `pod needs 1, 3 used + 0 reserved by user "alice" in the team's namespaces, limit 3 (user "alice" in GPUClusterQuota "ml" limits.nvidia.com/gpu)`},
		{name: "the team's reservations count", ns: "ml-dev", user: "bob", gpus: 1, teams: true, reserved: ghost(1, false),
			denial: `pod needs 1, 4 used + 1 reserved in the team's namespaces, limit 5 (GPUClusterQuota "ml"`},
		{name: "an unconfirmed team reservation may be waited for", ns: "ml-dev", user: "bob", gpus: 1, teams: true, reserved: ghost(1, true),
			denial: `4 used + 1 reserved in the team's namespaces`, fitsWithout: true},
		{name: "a namespace no team counts", ns: "web", user: "alice", gpus: 5, teams: false, allowed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{Pod: teamPod(tt.ns, "new", tt.user, tt.gpus), ChargedUser: tt.user,
				User: UserInfo{Username: tt.user}}
			if tt.teams {
				req.Teams = []Team{{Quota: q, Members: members, Reservations: tt.reserved}}
			}
			res, err := d.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != tt.allowed || res.FitsWithoutUnconfirmed != tt.fitsWithout {
				t.Fatalf("allowed %v (fits without unconfirmed %v), denials %q; want %v (%v)", res.Allowed, res.FitsWithoutUnconfirmed, res.Denials, tt.allowed, tt.fitsWithout)
			}
			if tt.allowed {
				return
			}
			if len(res.Denials) != 1 || !strings.Contains(res.Denials[0], tt.denial) || !strings.HasPrefix(res.Denials[0], `namespace "`+tt.ns+`"`) {
				t.Fatalf("denials %q; want one naming namespace %s and containing %q", res.Denials, tt.ns, tt.denial)
			}
			if !slices.ContainsFunc(res.Exceeded, func(c LimitCheck) bool { return c.Kind == KindClusterQuota && c.Quota == "ml" }) {
				t.Fatalf("Exceeded %+v; want GPUClusterQuota ml's limit", res.Exceeded)
			}
		})
	}
}

// TestPerUserLimitsFollowTheChargedUser: the per-user limit reads the
// user the pod is charged to (Request.ChargedUser: its verified stamp),
// not who sent the review, and each user's own usage.
func TestPerUserLimitsFollowTheChargedUser(t *testing.T) {
	l, _ := teamLedger(t)
	l.UpsertClusterQuota(&gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: "ml"},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			Hard:    corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("20")},
			PerUser: corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("3")}}})
	q, _ := l.ClusterQuota("ml")
	d, err := New(loadedEngine(t), l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	members := append(l.Selected("ml"), "ml-old") // alice: 3 GPUs, bob: 1
	for _, tt := range []struct {
		name, charged, requester string
		allowed                  bool
	}{
		{"alice at her limit", "alice", "alice", false},
		{"alice's pod sent by bob is still alice's", "alice", "bob", false},
		{"bob's pod sent by alice is bob's", "bob", "alice", true},
		{"no stamp: the requester", "", "alice", false},
		{"a controller's service account is a user of its own", "system:serviceaccount:kube-system:job-controller", "alice", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := d.Decide(context.Background(), Request{Pod: teamPod("ml-dev", "new", tt.charged, 1), ChargedUser: tt.charged,
				User: UserInfo{Username: tt.requester}, Teams: []Team{{Quota: q, Members: members}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != tt.allowed {
				t.Fatalf("allowed %v, denials %q; want %v", res.Allowed, res.Denials, tt.allowed)
			}
			if !tt.allowed {
				user := cmpOr(tt.charged, tt.requester)
				want := `3 used + 0 reserved by user "` + user + `" in the team's namespaces, limit 3 (user "` + user + `" in GPUClusterQuota "ml" limits.nvidia.com/gpu)`
				if len(res.Denials) != 1 || !strings.Contains(res.Denials[0], want) {
					t.Fatalf("denials %q; want one containing %q", res.Denials, want)
				}
				if !slices.ContainsFunc(res.Exceeded, func(c LimitCheck) bool { return c.User == user && c.Kind == KindClusterQuota }) {
					t.Fatalf("Exceeded %+v; want %s's per-user limit", res.Exceeded, user)
				}
			}
		})
	}
}

// TestTeamInputMatchesItsSchema: input.teamLimits as built, hard and per
// user, matches the input's JSON Schema.
func TestTeamInputMatchesItsSchema(t *testing.T) {
	l, q := teamLedger(t)
	c := &capturing{Evaluator: loadedEngine(t)}
	d, err := New(c, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decide(context.Background(), Request{Pod: teamPod("ml-dev", "new", "bob", 1), ChargedUser: "bob",
		Teams: []Team{{Quota: q, Members: l.Selected("ml")}}}); err != nil {
		t.Fatal(err)
	}
	matchesSchema(t, c.last)
	doc, err := ast.JSON(c.last)
	if err != nil {
		t.Fatal(err)
	}
	limits, _ := field(doc, "teamLimits").([]any)
	if len(limits) != 2 || field(limits[0], "perUser") != false || field(limits[1], "perUser") != true ||
		field(limits[1], "user") != "bob" || field(limits[1], "used") != jsonNum(1) || field(limits[0], "after") != jsonNum(4) {
		t.Fatalf("teamLimits %v; want the hard GPU limit (after 4) and bob's (used 1)", limits)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// gpus is the usage of n nvidia GPUs of 1024 MiB.
func gpus(n int64) effective.Usage {
	return effective.UsageOf(effective.NvidiaName, effective.Vector{GPU: n, MemMiB: n * 1024})
}

// TestTeamNotCountedIsNoDecision: a request that does not count a team
// quota selecting its namespace (listed before the namespace's labels
// were known, or before the quota was created) gets no decision, never
// one made without the team's limits; counting it, the pod is decided.
func TestTeamNotCountedIsNoDecision(t *testing.T) {
	l, q := teamLedger(t)
	d, err := New(loadedEngine(t), l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	pod := teamPod("ml-dev", "new", "carol", 1)
	for _, teams := range [][]Team{nil, {{Quota: ledger.TeamQuota{Name: "other"}}}} {
		res, err := d.Decide(context.Background(), Request{Pod: pod, ChargedUser: "carol", Teams: teams})
		if !errors.Is(err, ErrTeamsChanged) || res.Allowed || !strings.Contains(err.Error(), `GPUClusterQuota "ml"`) {
			t.Fatalf("teams %v: result %+v, error %v; want ErrTeamsChanged naming ml", teams, res, err)
		}
	}
	if res, err := d.Decide(context.Background(), Request{Pod: pod, ChargedUser: "carol",
		Teams: []Team{{Quota: q, Members: l.Selected("ml")}}}); err != nil || !res.Allowed {
		t.Fatalf("counting the team: %+v, %v", res, err)
	}
	// A namespace no team selects needs none.
	if res, err := d.Decide(context.Background(), Request{Pod: teamPod("web", "new", "carol", 1)}); err != nil || !res.Allowed {
		t.Fatalf("outside every team: %+v, %v", res, err)
	}
}
