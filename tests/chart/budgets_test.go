package chart_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

// budgetCluster is a bare control plane with the chart's CRDs installed
// and kubectl pointed at it as a cluster admin.
type budgetCluster struct {
	kubeconfig, kubectlBin string
}

func startBudgetCluster(t *testing.T) *budgetCluster {
	t.Helper()
	assets := envtestgate.Assets(t)
	env := &envtest.Environment{BinaryAssetsDirectory: assets,
		CRDDirectoryPaths: []string{filepath.Join(chartDir, "files", "crd")}, ErrorIfCRDPathMissing: true}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	c := &budgetCluster{kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), kubectlBin: filepath.Join(assets, "kubectl")}
	if err := local.WriteAdminKubeconfig(env, c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return c
}

// kubectl runs kubectl; stdin is the manifest to apply, if any.
func (c *budgetCluster) kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), c.kubectlBin, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *budgetCluster) must(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := c.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

const budgetObjects = `apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: gpuadmit.io/v1alpha1
kind: GPUBudget
metadata: {name: ml-hours, namespace: team-a}
spec:
  window: {calendar: Monthly, timeZone: Europe/Berlin}
  hard: {nvidia.com/gpu: "100", nvidia.com/gpumem: "0.5"}
---
apiVersion: gpuadmit.io/v1alpha1
kind: GPUClusterBudget
metadata: {name: ml}
spec:
  namespaces: [team-a]
  window: {rolling: 720h}
  hard: {nvidia.com/gpu: "1000"}
`

const budgetStatus = `{"status": {"window": "Monthly Europe/Berlin", "summary": "nvidia.com/gpu: 81.5/100", "percent": 81,
  "windowEnd": "2026-12-31T23:00:00Z", "projectedExhaustion": "2026-12-20T10:00:00Z"}}`

// TestBudgetColumnsAndAccess: kubectl get gpubudget and gpuclusterbudget
// print the window, the use, the percent and the window's end (the
// status the elected replica writes), and -o wide the projected
// exhaustion; on a real API server, a namespace admin given the chart's
// aggregated budget role reads the namespace's budgets and can neither
// create, change, delete one nor write its status; the webhook's
// ServiceAccount writes only the status.
func TestBudgetColumnsAndAccess(t *testing.T) {
	c := startBudgetCluster(t)
	c.must(t, budgetObjects, "apply", "-f", "-")
	c.must(t, "", "patch", "gpubudget", "ml-hours", "-n", "team-a", "--subresource=status", "--type=merge", "-p", budgetStatus)
	c.must(t, "", "patch", "gpuclusterbudget", "ml", "--subresource=status", "--type=merge", "-p", budgetStatus)
	for _, get := range [][]string{{"get", "gpubudget", "-n", "team-a"}, {"get", "gb", "-n", "team-a"}, {"get", "gpuclusterbudget"}, {"get", "gcb"}} {
		out := c.must(t, "", get...)
		local.MustContain(t, "kubectl "+strings.Join(get, " "), strings.Join(strings.Fields(out), " "),
			"NAME WINDOW USED PERCENT ENDS AGE", "Monthly Europe/Berlin nvidia.com/gpu: 81.5/100 81")
		wide := c.must(t, "", append(get, "-o", "wide")...)
		local.MustContain(t, "kubectl "+strings.Join(get, " ")+" -o wide", wide, "EXHAUSTED", "2026-12-20T10:00:00Z")
	}
	applyRenderedRoles(t, c)
	c.must(t, "", "create", "rolebinding", "tenant-admin", "-n", "team-a", "--clusterrole=admin", "--user=alice")
	c.must(t, "", "create", "rolebinding", "tenant-budgets", "-n", "team-a", "--clusterrole=gpuadmit-gpubudget-view", "--user=alice")
	c.must(t, "", "create", "clusterrolebinding", "webhook", "--clusterrole=gpuadmit-webhook", "--serviceaccount=gpuadmit-system:gpuadmit-webhook")
	const sa = "system:serviceaccount:gpuadmit-system:gpuadmit-webhook"
	for _, tc := range []struct {
		as, verb, what, sub string
		want                string
	}{
		{"alice", "get", "gpubudgets", "", "yes"},
		{"alice", "list", "gpubudgets", "", "yes"},
		{"alice", "create", "gpubudgets", "", "no"},
		{"alice", "update", "gpubudgets", "", "no"},
		{"alice", "patch", "gpubudgets", "", "no"},
		{"alice", "delete", "gpubudgets", "", "no"},
		{"alice", "update", "gpubudgets", "status", "no"},
		{"alice", "patch", "gpubudgets", "status", "no"},
		{"alice", "create", "gpuclusterbudgets", "", "no"},
		{sa, "list", "gpubudgets", "", "yes"},
		{sa, "watch", "gpuclusterbudgets", "", "yes"},
		{sa, "update", "gpubudgets", "status", "yes"},
		{sa, "update", "gpuclusterbudgets", "status", "yes"},
		{sa, "update", "gpubudgets", "", "no"},
		{sa, "patch", "gpuclusterbudgets", "", "no"},
		{sa, "delete", "gpubudgets", "", "no"},
		{sa, "create", "gpubudgets", "", "no"},
	} {
		args := []string{"auth", "can-i", tc.verb, tc.what, "--as", tc.as}
		if tc.what == "gpubudgets" {
			args = append(args, "-n", "team-a")
		}
		if tc.sub != "" {
			args = append(args, "--subresource", tc.sub)
		}
		out, _ := c.kubectl(t, "", args...) // exit 1 on "no"
		// The answer is the last line (a warning may come first: the
		// kubeconfig's default namespace for a cluster-scoped resource).
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := lines[len(lines)-1]; got != tc.want {
			t.Errorf("kubectl %s: %q, want %q", strings.Join(args, " "), got, tc.want)
		}
	}
	// The attack itself: the namespace admin tries to lift the budget.
	if out, err := c.kubectl(t, "", "--as", "alice", "patch", "gpubudget", "ml-hours", "-n", "team-a", "--type=merge",
		"-p", `{"spec":{"hard":{"nvidia.com/gpu":"1000000"}}}`); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("a namespace admin raised their own budget: %v %s", err, out)
	}
	if out, err := c.kubectl(t, "", "--as", "alice", "delete", "gpubudget", "ml-hours", "-n", "team-a"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("a namespace admin deleted their own budget: %v %s", err, out)
	}
}

// applyRenderedRoles creates the chart's budget view role and the
// webhook's ClusterRole as the chart renders them.
func applyRenderedRoles(t *testing.T, c *budgetCluster) {
	t.Helper()
	objs := render(t)
	var docs []string
	for _, name := range []string{"gpuadmit-gpubudget-view", "gpuadmit-webhook"} {
		u := find(objs, "ClusterRole", name)
		if u == nil {
			t.Fatalf("the chart renders no ClusterRole %s", name)
		}
		docs = append(docs, yamlDoc(t, u))
	}
	c.must(t, strings.Join(docs, "\n---\n"), "apply", "-f", "-")
}

func yamlDoc(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
