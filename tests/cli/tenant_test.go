package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// tenantNS is the namespace of the tenant bob, who holds the built-in
// edit role there and nothing else.
const tenantNS = "team-t"

// testTenantGetsTheWebhooksVerdict: bob (namespace edit only: no nodes,
// no other namespace's pods, no namespace object, none of gpuadmit's
// ConfigMaps) runs eval live on a whole-card pod, whose memory is the size
// of a device only the nodes tell. Decided locally it would be denied as
// unresolved; eval asks the webhook by a server dry run and gets exactly
// the answer the admin's real create gets: admitted while the quota holds
// a card, and denied with the webhook's own message once it does not. Two
// dry runs of the whole card before the real create reserve nothing: the
// real create is still admitted.
func (s *suite) testTenantGetsTheWebhooksVerdict(t *testing.T) {
	ctx := t.Context()
	if err := s.c.CreateNamespace(ctx, tenantNS, nil); err != nil {
		t.Fatal(err)
	}
	q := testquota.New(tenantNS, "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "45000"}) // one card of node1 or node2, not two
	q.UID = ""
	if _, err := s.c.Kube.CoreV1().ResourceQuotas(tenantNS).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.aggregate(t, "view") // edit aggregates view
	s.aggregate(t, "edit")
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-edit", Namespace: tenantNS},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}}
	if _, err := s.c.Kube.RbacV1().RoleBindings(tenantNS).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.awaitCan(t, "bob", "create", "pods", tenantNS)

	first := podFile(t, testpod.New("whole-card").NS(tenantNS).App("app", testpod.GPU(1)).Build())
	for range 2 {
		got, r := s.tenantEval(t, first)
		if r.code != 0 || !got.Allowed {
			t.Fatalf("eval --as bob of the first card: exit %d, allowed %v, stderr %q\n%s", r.code, got.Allowed, r.stderr, r.stdout)
		}
	}
	if create := s.kubectl(t, nil, "create", "-f", first); create.code != 0 {
		t.Fatalf("the admin's create of the first card after bob's dry runs: exit %d, stderr %q (a dry run reserved?)", create.code, create.stderr)
	}
	var gpumem int64
	local.AwaitLedger(t, s.c, tenantNS, func(n ledger.NamespaceSnapshot) bool {
		gpumem = n.Used.Of("nvidia").MemMiB
		return n.Pods == 1 && n.Reservations == 0
	})
	if gpumem < 24576 {
		t.Fatalf("the first card is charged %d MiB, want a whole device's", gpumem)
	}

	second := podFile(t, testpod.New("second-card").NS(tenantNS).App("app", testpod.GPU(1)).Build())
	got, r := s.tenantEval(t, second)
	if r.code != 1 || got.Allowed || len(got.Denials) != 1 {
		t.Fatalf("eval --as bob of a second card: exit %d, allowed %v, denials %q, stderr %q; want one denial, exit 1", r.code, got.Allowed, got.Denials, r.stderr)
	}
	create := s.kubectl(t, nil, "create", "-f", second)
	want := `admission webhook "validate.gpuadmit.io" denied the request: ` + got.Denials[0] + "\n"
	if create.code == 0 || !strings.HasSuffix(create.stderr, want) {
		t.Fatalf("the admin's create of a second card: exit %d, stderr %q; want the denial bob was told, %q", create.code, create.stderr, want)
	}
	if !strings.Contains(got.Denials[0], `namespace "team-t": nvidia.com/gpumem: pod needs`) {
		t.Errorf("the denial %q is not the quota's", got.Denials[0])
	}
	s.testTenantWorkloadWhole(t)
}

// testTenantWorkloadWhole: bob's eval of a Deployment of two whole cards,
// which can never fit the quota of 45000 MiB, dry-runs the Deployment's own
// create too: the workloads webhook refuses it as a whole, as it refuses
// the admin's apply.
func (s *suite) testTenantWorkloadWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cards.yaml")
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cards, namespace: " + tenantNS + "}\nspec:\n  replicas: 2\n" +
		"  selector: {matchLabels: {app: cards}}\n  template:\n    metadata: {labels: {app: cards}}\n    spec:\n" +
		"      containers: [{name: app, image: registry.example/app:1, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	r := s.kubectl(t, nil, "gpuadmit", "eval", "-f", path, "-o", "json", "--as", "bob")
	var got struct {
		Allowed bool       `json:"allowed"`
		Objects []evalJSON `json:"objects"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Objects) != 1 {
		t.Fatalf("eval --as bob of the Deployment: exit %d, stderr %q: %v\n%s", r.code, r.stderr, err, r.stdout)
	}
	denials := strings.Join(got.Objects[0].Denials, "\n")
	if r.code != 1 || got.Allowed || !strings.Contains(denials, "Deployment "+tenantNS+"/cards-") || !strings.Contains(denials, "can never run whole: 2 pods x") {
		t.Fatalf("eval --as bob of the Deployment: exit %d, denials %q; want it refused as a whole", r.code, denials)
	}
	apply := s.kubectl(t, nil, "apply", "-f", path)
	if apply.code == 0 || !strings.Contains(apply.stderr, `admission webhook "validate-workloads.gpuadmit.io" denied the request`) {
		t.Fatalf("the admin's apply of the Deployment: exit %d, stderr %q", apply.code, apply.stderr)
	}
}

// tenantEval runs kubectl gpuadmit eval -o json as bob and checks that it
// says the webhook decided, and why.
func (s *suite) tenantEval(t *testing.T, file string) (evalJSON, result) {
	t.Helper()
	r := s.kubectl(t, nil, "gpuadmit", "eval", "-f", file, "-o", "json", "--as", "bob")
	var got evalJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("eval --as bob: exit %d, stderr %q: %v\n%s", r.code, r.stderr, err, r.stdout)
	}
	want := "kubectl gpuadmit eval: decided by the webhook (server dry run), as you may not list nodes, list pods in all namespaces, "
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "get configmap gpuadmit-system/gpuadmit-config") {
		t.Errorf("eval --as bob: stderr %q lacks %q and the configuration it may not read", r.stderr, want)
	}
	return got, r
}

// awaitCan waits until the API server's authorizer lets user verb
// resource in ns (RBAC takes effect when its caches saw the binding).
func (s *suite) awaitCan(t *testing.T, user, verb, resource, ns string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := s.kubectl(t, nil, "auth", "can-i", verb, resource, "-n", ns, "--as", user)
		if r.code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still may not %s %s in %s: %q", user, verb, resource, ns, r.stdout+r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// aggregate fills the built-in ClusterRole role with the rules of the
// ClusterRoles its aggregationRule selects, as kube-controller-manager's
// aggregation controller does (the suite runs no controller manager, so
// edit holds no rule of its own).
func (s *suite) aggregate(t *testing.T, role string) {
	t.Helper()
	ctx := t.Context()
	roles := s.c.Kube.RbacV1().ClusterRoles()
	cr, err := roles.Get(ctx, role, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cr.AggregationRule == nil {
		t.Fatalf("ClusterRole %s has no aggregationRule", role)
	}
	var rules []rbacv1.PolicyRule
	for _, sel := range cr.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			t.Fatal(err)
		}
		l, err := roles.List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Items {
			rules = append(rules, r.Rules...)
		}
	}
	cr.Rules = rules
	if _, err := roles.Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
