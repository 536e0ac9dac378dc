// Package cli_test is the integration suite of the gpuadmit command line on
// a real kube-apiserver and etcd (built from source, driven by envtest
// through internal/cluster/local) with the webhook running: usage and eval
// read the live cluster and answer exactly what they answer from a
// 'kubectl get -o yaml' dump of it, and the binary installed as
// kubectl-gpuadmit runs as `kubectl gpuadmit` through the kubectl built
// from source, giving the webhook's verdict, also with gpuadmit's
// configuration and policy ConfigMaps installed in the cluster.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
)

// The cluster the suite seeds: team-a (gpumem quota 24576 MiB) runs two
// pods on node1's 24 GiB GPU, team-b (quota: 2 GPUs, 200 cores) one on
// node2, default a pod without GPUs, and team-c a HAMi-DRA claim
// (seedDRA).
const (
	node2 = "node2"
	teamB = "team-b"
)

// suite is the running cluster and the binary installed as kubectl-gpuadmit.
type suite struct {
	c *local.Cluster
	// bin is the directory holding kubectl-gpuadmit (first on PATH).
	bin string
	// home is HOME for kubectl and the plugin (their caches).
	home string
}

func start(t *testing.T) *suite {
	t.Helper()
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	s := &suite{c: c, bin: t.TempDir(), home: t.TempDir()}
	build := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(s.bin, "kubectl-gpuadmit"), "../../cmd/gpuadmit")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-gpuadmit: %v\n%s", err, out)
	}
	if err := s.seed(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// seed creates the namespaces, quotas, nodes and pods; the pods go through
// the webhook, bound and assigned to devices as HAMi's scheduler would.
func (s *suite) seed(ctx context.Context) error {
	if err := s.c.SeedTeamA(ctx); err != nil {
		return err
	}
	if err := s.c.CreateNamespace(ctx, teamB, nil); err != nil {
		return err
	}
	q := testquota.New(teamB, "gpu-quota", map[string]string{"limits.nvidia.com/gpu": "2", "limits.nvidia.com/gpucores": "200"})
	q.UID = ""
	if _, err := s.c.Kube.CoreV1().ResourceQuotas(teamB).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return err
	}
	n := testnode.WithGPUs(node2, nil, 40960, 40960)
	n.UID = ""
	if _, err := s.c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, b := range []*testpod.Builder{
		testpod.New("server").NS(local.TeamA).App("app", testpod.GPU(1), testpod.Mem(10240)).
			Node(local.NodeName).Devices("GPU-0,NVIDIA,10240,0:;"),
		testpod.New("small-job").NS(local.TeamA).App("app", testpod.GPU(1), testpod.Mem(12288)).
			Node(local.NodeName).Devices("GPU-0,NVIDIA,12288,0:;"),
		testpod.New("trainer").NS(teamB).App("app", testpod.GPU(1), testpod.Mem(8192), testpod.Cores(50)).
			Node(node2).Devices("GPU-node2-0,NVIDIA,8192,50:;"),
		testpod.New("web").NS("default").App("web"),
	} {
		p := b.Build()
		p.UID, p.Status = "", corev1.PodStatus{}
		if _, err := s.c.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return s.seedDRA(ctx)
}

// result is what a command printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// exec runs name with args, kubectl-gpuadmit first on PATH and the
// cluster's kubeconfig as KUBECONFIG.
func (s *suite) exec(t *testing.T, stdin []byte, name string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.c.Kubeconfig, "HOME="+s.home,
		"PATH="+s.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return result{out.String(), errb.String(), exit.ExitCode()}
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return result{out.String(), errb.String(), 0}
}

// plugin runs the binary itself.
func (s *suite) plugin(t *testing.T, args ...string) result {
	t.Helper()
	return s.exec(t, nil, filepath.Join(s.bin, "kubectl-gpuadmit"), args...)
}

// kubectl runs the kubectl built from source, which finds the plugin on
// PATH (and refuses flags before a plugin's name: KUBECONFIG, not
// --kubeconfig, names the cluster).
func (s *suite) kubectl(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	return s.exec(t, stdin, filepath.Join(s.c.Assets, "kubectl"), args...)
}

// podFile writes pod as YAML into a file of the test's and returns its path.
func podFile(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	pod.UID, pod.Status = "", corev1.PodStatus{}
	b, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), pod.Name+".yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
