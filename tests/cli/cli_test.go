package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// TestCLI runs one cluster for every check: starting it and building the
// binary take most of the time.
func TestCLI(t *testing.T) {
	s := start(t)
	t.Run("usage and eval read the cluster as a dump of it reads", s.testLiveIsTheDump)
	t.Run("kubectl gpuadmit usage -n team-a -o table", s.testKubectlPluginTable)
	t.Run("kubectl gpuadmit eval gives the webhook's verdict", s.testEvalIsTheWebhook)
	t.Run("a namespace's user (--as) reads what it may", s.testNamespaceUser)
	t.Run("a tenant with namespace edit only gets the webhook's verdict from eval", s.testTenantGetsTheWebhooksVerdict)
	t.Run("eval decides with the cluster's configuration and policies, as the webhook", s.testEvalClusterConfig)
	// It lowers team-a's quota under its usage, and sets it back.
	t.Run("kubectl gpuadmit top and audit", s.testTopAndAudit)
	t.Run("gpuadmit why deployment/web: a Deployment whose ReplicaSet's pods were denied", s.testWhy)
	// Last: it stops the webhook and removes the GPUReservationSet CRD.
	t.Run("eval counts the GPUReservationSet's reservations, and goes without the CRD", s.testEvalReservations)
}

// usageJSON is the part of `gpuadmit usage`'s JSON the suite checks.
type usageJSON struct {
	Namespaces map[string]struct {
		Used   struct{ GPU, GPUMem, GPUCores int64 }
		Limits struct{ GPU, GPUMem, GPUCores *int64 }
		Pods   int
		Claims int
	}
	Nodes map[string]struct {
		Devices map[string]struct {
			Capacity *struct{ GPUMem int64 }
			Used     struct{ GPU, GPUMem int64 }
		}
	}
}

// dump writes what kubectl get -A -o yaml prints of the objects the
// commands read into a file of the test's, and returns its path.
func (s *suite) dump(t *testing.T) string {
	t.Helper()
	dump := s.kubectl(t, nil, "get", "namespaces,pods,nodes,resourcequotas,resourceclaims,resourceclaimtemplates,resourceslices,deviceclasses",
		"--all-namespaces", "-o", "yaml")
	if dump.code != 0 {
		t.Fatalf("kubectl get: exit %d: %s", dump.code, dump.stderr)
	}
	state := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(state, []byte(dump.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	return state
}

func (s *suite) testLiveIsTheDump(t *testing.T) {
	state := s.dump(t)
	for _, tt := range []struct {
		args []string
		// dump is what the dump is asked instead (args when nil): the
		// context's namespace (default) is the live default, every
		// namespace of the dump the dump's.
		dump []string
	}{
		{args: []string{"usage", "-A", "-o", "json"}},
		{args: []string{"usage", "-n", local.TeamA, "-o", "json"}},
		{args: []string{"usage", "--namespace", teamB}},
		{args: []string{"usage", "--all-namespaces", "-o", "table"}},
		{args: []string{"usage", "-n", teamC, "-o", "wide"}},
		{args: []string{"usage", "-o", "json"}, dump: []string{"usage", "-n", "default", "-o", "json"}},
		{args: []string{"usage", "-A", "-o", "yaml"}, dump: []string{"usage", "-o", "yaml"}},
	} {
		dumpArgs := tt.dump
		if dumpArgs == nil {
			dumpArgs = tt.args
		}
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			live := s.plugin(t, tt.args...)
			fromDump := s.plugin(t, append(dumpArgs, "--state", state)...)
			if live.code != 0 || fromDump.code != 0 || live.stderr != usageLine || fromDump.stderr != "" {
				t.Fatalf("live: exit %d, stderr %q (want %q); --state: exit %d, stderr %q", live.code, live.stderr, usageLine, fromDump.code, fromDump.stderr)
			}
			if live.stdout != fromDump.stdout {
				t.Errorf("live:\n%s\n--state on a dump:\n%s", live.stdout, fromDump.stdout)
			}
		})
	}
	// And what it answers is the seeded cluster.
	var u usageJSON
	if err := json.Unmarshal([]byte(s.plugin(t, "usage", "-A", "-o", "json").stdout), &u); err != nil {
		t.Fatal(err)
	}
	a, b := u.Namespaces[local.TeamA], u.Namespaces[teamB]
	if a.Pods != 2 || a.Used.GPUMem != 22528 || a.Limits.GPUMem == nil || *a.Limits.GPUMem != 24576 {
		t.Errorf("team-a: %+v, want 2 pods using 22528 of 24576 MiB", a)
	}
	if b.Pods != 1 || b.Used.GPU != 1 || b.Used.GPUCores != 50 || b.Limits.GPU == nil || *b.Limits.GPU != 2 {
		t.Errorf("team-b: %+v, want 1 pod using 1 of 2 GPUs", b)
	}
	if c := u.Namespaces[teamC]; c.Pods != 0 || c.Claims != 1 || c.Used.GPUMem != trainMiB || c.Limits.GPUMem == nil || *c.Limits.GPUMem != 16384 {
		t.Errorf("team-c: %+v, want 1 claim using 12288 of 16384 MiB", c)
	}
	if _, ok := u.Namespaces["default"]; ok {
		t.Errorf("namespace default has no GPU pod and no quota, yet is listed")
	}
	if d := u.Nodes[local.NodeName].Devices["GPU-0"]; d.Capacity == nil || d.Capacity.GPUMem != 24576 || d.Used.GPU != 2 || d.Used.GPUMem != 22528 {
		t.Errorf("node1's GPU-0: %+v, want 2 pods using 22528 of 24576 MiB", d)
	}
	s.testEvalLiveIsTheDump(t, state)
}

func (s *suite) testKubectlPluginTable(t *testing.T) {
	r := s.kubectl(t, nil, "gpuadmit", "usage", "-n", local.TeamA, "-o", "table")
	if r.code != 0 || r.stderr != usageLine {
		t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, usageLine)
	}
	var rows []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows = append(rows, strings.Join(f, " "))
		}
	}
	want := []string{ // -n team-a: team-a alone; the devices of every node
		"NAMESPACE PODS GPU GPUMEM(MiB) GPUCORES",
		"team-a 2 2/- 22528/24576 0/-",
		"NODE DEVICE GPU GPUMEM(MiB) GPUCORES",
		"node1 GPU-0 2 22528/24576 0/100",
		"node2 GPU-node2-0 1 8192/40960 50/100",
		"node2 GPU-node2-1 0 0/40960 0/100",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("kubectl gpuadmit usage -n team-a -o table:\n%s\nwant the rows\n%s", r.stdout, strings.Join(want, "\n"))
	}
	help := s.kubectl(t, nil, "gpuadmit", "usage", "--help")
	if help.code != 0 || !strings.Contains(help.stdout, "kubectl gpuadmit usage [--state STATE.yaml]") {
		t.Errorf("kubectl gpuadmit usage --help: exit %d, no 'kubectl gpuadmit usage' in\n%s", help.code, help.stdout)
	}
	// kubectl completes a plugin's arguments with kubectl_complete-<plugin>.
	if err := os.Symlink("kubectl-gpuadmit", filepath.Join(s.bin, "kubectl_complete-gpuadmit")); err != nil {
		t.Fatal(err)
	}
	if comp := s.kubectl(t, nil, "__complete", "gpuadmit", "usage", "-o", ""); comp.code != 0 || comp.stdout != "table\nwide\njson\nyaml\njsonpath=\nname\ncustom-columns=\n:4\n" {
		t.Errorf("kubectl __complete gpuadmit usage -o '': exit %d, stdout %q, want the formats", comp.code, comp.stdout)
	}
	// -n completes the cluster's namespaces.
	if comp := s.kubectl(t, nil, "__complete", "gpuadmit", "eval", "-n", "team-"); comp.code != 0 || !strings.HasPrefix(comp.stdout, "team-a\nteam-b\n") ||
		!strings.HasSuffix(comp.stdout, ":4\n") {
		t.Errorf("kubectl __complete gpuadmit eval -n team-: exit %d, stdout %q, want the team- namespaces", comp.code, comp.stdout)
	}
	bad := s.kubectl(t, nil, "gpuadmit", "usage", "--bogus")
	if bad.code != 2 || !strings.Contains(bad.stderr, "kubectl gpuadmit usage: unknown flag: --bogus") {
		t.Errorf("kubectl gpuadmit usage --bogus: exit %d, stderr %q", bad.code, bad.stderr)
	}
}

// evalJSON is `gpuadmit eval`'s JSON for one pod.
type evalJSON struct {
	Allowed  bool     `json:"allowed"`
	Denials  []string `json:"denials"`
	Warnings []string `json:"warnings"`
}

func (s *suite) testEvalIsTheWebhook(t *testing.T) {
	tests := []struct {
		name string
		pod  *testpod.Builder
		// ns is -n for both kubectl gpuadmit eval and kubectl create.
		ns          string
		wantAllowed bool
		wantDenial  string
	}{
		{name: "4 GiB more than team-a's 24 GiB quota holds, -n for a pod without a namespace",
			pod: testpod.New("too-big").NS("").App("app", testpod.GPU(1), testpod.Mem(4096)), ns: local.TeamA,
			wantDenial: `namespace "team-a": nvidia.com/gpumem: pod needs 4096 MiB, 22528 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`},
		{name: "2 GiB fit", pod: testpod.New("fits").NS("").App("app", testpod.GPU(1), testpod.Mem(2048)), ns: local.TeamA,
			wantAllowed: true},
		{name: "the pod's own namespace: a third GPU in team-b",
			pod:        testpod.New("two-gpus").NS(teamB).App("app", testpod.GPU(2), testpod.Mem(1024)),
			wantDenial: `namespace "team-b": nvidia.com/gpu: pod needs 2, 1 used + 0 reserved, limit 2 (ResourceQuota "gpu-quota" limits.nvidia.com/gpu)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := podFile(t, tt.pod.Build())
			var nsArgs []string
			if tt.ns != "" {
				nsArgs = []string{"-n", tt.ns}
			}
			eval := s.kubectl(t, nil, append([]string{"gpuadmit", "eval", "-o", "json", "-f", file}, nsArgs...)...)
			var got evalJSON
			if err := json.Unmarshal([]byte(eval.stdout), &got); err != nil {
				t.Fatalf("kubectl gpuadmit eval: exit %d, stderr %q, stdout not JSON: %v\n%s", eval.code, eval.stderr, err, eval.stdout)
			}
			wantCode := 1
			if tt.wantAllowed {
				wantCode = 0
			}
			if eval.code != wantCode || got.Allowed != tt.wantAllowed || eval.stderr != evalLine {
				t.Fatalf("kubectl gpuadmit eval: exit %d, allowed %v, stderr %q; want exit %d, stderr %q\n%s", eval.code, got.Allowed, eval.stderr, wantCode, evalLine, eval.stdout)
			}
			if tt.wantDenial != "" && !slices.Equal(got.Denials, []string{tt.wantDenial}) {
				t.Errorf("denials %q, want %q", got.Denials, tt.wantDenial)
			}
			// The webhook, asked by the API server (server-side dry run:
			// nothing is created).
			create := s.kubectl(t, nil, append([]string{"create", "--dry-run=server", "-f", file}, nsArgs...)...)
			if (create.code == 0) != tt.wantAllowed {
				t.Fatalf("kubectl create: exit %d, stderr %q; gpuadmit eval said allowed=%v", create.code, create.stderr, got.Allowed)
			}
			for _, d := range got.Denials {
				if !strings.Contains(create.stderr, d) {
					t.Errorf("the webhook's answer %q lacks eval's denial %q", create.stderr, d)
				}
			}
		})
	}
}

// testNamespaceUser: alice may read team-a's pods, quotas, GPUUsage and GPUReservationSet,
// nothing else; usage and eval -n team-a --as alice read those and say
// what they could not read.
func (s *suite) testNamespaceUser(t *testing.T) {
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gpu-reader", Namespace: local.TeamA}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "resourcequotas"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{gpuadmitv1.Group}, Resources: []string{gpuadmitv1.Resource, gpuadmitv1.ReservationSetResource}, Verbs: []string{"get"}},
	}}
	if _, err := s.c.Kube.RbacV1().Roles(local.TeamA).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: local.TeamA},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
	if _, err := s.c.Kube.RbacV1().RoleBindings(local.TeamA).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC takes effect when the API server's authorizer caches saw it.
	deadline := time.Now().Add(10 * time.Second)
	var r result
	for {
		r = s.kubectl(t, nil, "gpuadmit", "usage", "-n", local.TeamA, "--as", "alice", "-o", "json")
		if r.code == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.code != 0 {
		t.Fatalf("usage --as alice: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, w := range []string{
		"kubectl gpuadmit usage: warning: cannot list nodes (nodes is forbidden: User \"alice\" cannot list resource \"nodes\"",
		`kubectl gpuadmit usage: warning: cannot list pods in all namespaces (pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope): reading namespace ["team-a"] only`,
		`kubectl gpuadmit usage: configuration: the defaults (cannot read ConfigMap gpuadmit-system/gpuadmit-config: configmaps "gpuadmit-config" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "gpuadmit-system")` + "\n",
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", r.stderr, w)
		}
	}
	var u usageJSON
	if err := json.Unmarshal([]byte(r.stdout), &u); err != nil {
		t.Fatal(err)
	}
	if a := u.Namespaces[local.TeamA]; len(u.Namespaces) != 1 || a.Used.GPUMem != 22528 || a.Limits.GPUMem == nil || *a.Limits.GPUMem != 24576 {
		t.Errorf("usage --as alice: %+v, want team-a alone using 22528 of 24576 MiB", u.Namespaces)
	}
	// The devices team-a's pods were assigned, of unknown capacity; node2's
	// (team-b's pod) unknown.
	if d, ok := u.Nodes[local.NodeName].Devices["GPU-0"]; len(u.Nodes) != 1 || !ok || d.Capacity != nil || d.Used.GPUMem != 22528 {
		t.Errorf("usage --as alice: nodes %+v, want node1's GPU-0 alone, 22528 MiB used, capacity unknown", u.Nodes)
	}
	// alice may neither read what the webhook reads nor create pods (the
	// server dry run): no verdict, an error naming both.
	file := podFile(t, testpod.New("too-big").NS("").App("app", testpod.GPU(1), testpod.Mem(4096)).Build())
	eval := s.kubectl(t, nil, "gpuadmit", "eval", "-f", file, "-n", local.TeamA, "--as", "alice")
	if eval.code != 2 || eval.stdout != "" {
		t.Errorf("eval --as alice: exit %d, stderr %q\n%s; want exit 2, no verdict", eval.code, eval.stderr, eval.stdout)
	}
	for _, want := range []string{
		`policies: built-in (cannot list the ConfigMaps of gpuadmit-system: configmaps is forbidden: User "alice" cannot list resource "configmaps"`,
		"cannot decide as the webhook does: you may not list nodes, get namespace team-a, list pods in all namespaces, ",
		`get configmap gpuadmit-system/gpuadmit-config, list configmaps in namespace gpuadmit-system, which the webhook reads, ` +
			`and a server dry run needs create on pods in namespace team-a: pods is forbidden: User "alice" cannot create resource "pods"`,
	} {
		if !strings.Contains(eval.stderr, want) {
			t.Errorf("eval --as alice: stderr %q lacks %q", eval.stderr, want)
		}
	}
}

func (s *suite) testEvalReservations(t *testing.T) {
	ctx := t.Context()
	// Stopped, the webhook no longer tidies GPUReservationSets: the
	// reservation below stays.
	if err := s.c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(s.c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	u := &gpuadmitv1.GPUReservationSet{}
	err = cl.Get(ctx, client.ObjectKey{Namespace: local.TeamA, Name: gpuadmitv1.ObjectName}, u)
	if apierrors.IsNotFound(err) {
		u.Namespace, u.Name = local.TeamA, gpuadmitv1.ObjectName
		err = cl.Create(ctx, u)
	}
	if err != nil {
		t.Fatal(err)
	}
	u.Status.Reservations = append(u.Status.Reservations, gpuadmitv1.Reservation{PodUID: "uid-admitted-not-seen", PodName: "admitted",
		Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 1024}, Writer: "another-replica", AdmittedAt: metav1.Now()})
	u.Status.ReservationCount = int32(len(u.Status.Reservations))
	if err := cl.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	file := podFile(t, testpod.New("fits").NS(local.TeamA).App("app", testpod.GPU(1), testpod.Mem(2048)).Build())
	var got evalJSON
	eval := s.plugin(t, "eval", "-f", file, "-o", "json")
	if err := json.Unmarshal([]byte(eval.stdout), &got); err != nil {
		t.Fatalf("eval: exit %d, stderr %q: %v", eval.code, eval.stderr, err)
	}
	want := `namespace "team-a": nvidia.com/gpumem: pod needs 2048 MiB, 22528 MiB used + 1024 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`
	if eval.code != 1 || !slices.Equal(got.Denials, []string{want}) {
		t.Fatalf("with 1024 MiB reserved: exit %d, denials %q; want exit 1, %q", eval.code, got.Denials, want)
	}

	// Without the CRD, nothing is reserved and nothing is said about it.
	if del := s.kubectl(t, nil, "delete", "crd", "gpureservationsets.gpuadmit.io"); del.code != 0 {
		t.Fatalf("kubectl delete crd: exit %d: %s", del.code, del.stderr)
	}
	eval = s.plugin(t, "eval", "-f", file)
	if eval.code != 0 || eval.stderr != evalLine {
		t.Fatalf("without the GPUReservationSet CRD: exit %d, stderr %q\n%s", eval.code, eval.stderr, eval.stdout)
	}
}
