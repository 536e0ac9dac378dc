package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/policysync"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// What usage and eval say they decide with in the suite's cluster, where
// gpuadmit's ConfigMaps are not installed (the webhook runs with every
// default).
const (
	noConfig   = "configuration: the defaults (no ConfigMap gpuadmit-system/gpuadmit-config; is gpuadmit installed in another namespace? --gpuadmit-namespace)"
	noPolicies = "policies: built-in (no ConfigMap of gpuadmit-system matches gpuadmit.io/policy=true)"
	// usageLine and evalLine are the whole lines, as kubectl gpuadmit.
	usageLine = "kubectl gpuadmit usage: " + noConfig + "\n"
	evalLine  = "kubectl gpuadmit eval: " + noConfig + "; " + noPolicies + "\n" + decidedLocally
	// decidedLocally is eval's line when it read everything the webhook
	// reads (the suite's admin).
	decidedLocally = "kubectl gpuadmit eval: decided locally\n"
)

// factor2 is the webhook's configuration in its versioned form, with
// memoryFactor 2: a pod's nvidia.com/gpumem counts twice its MiB.
const factor2 = `apiVersion: config.gpuadmit.io/v1alpha1
kind: Configuration
devices:
  nvidia:
    memoryFactor: 2
`

// perPodCap is an operator policy allowing at most 4096 MiB of GPU memory
// per pod, and its test; brokenTest is a test it fails.
const (
	perPodCap = `package gpuadmit.admission

deny contains msg if {
	input.demand.effective.gpumem > 4096
	msg := sprintf("pod %q: %d MiB of GPU memory; the operators allow at most 4096 MiB per pod", [input.pod.name, input.demand.effective.gpumem])
}
`
	perPodCapTest = `package gpuadmit.admission_test

import data.gpuadmit.admission

test_5000_denied if count(admission.deny) == 1 with input as {"pod": {"name": "p"}, "demand": {"effective": {"gpumem": 5000}}}
`
	brokenTest = `package gpuadmit.admission_test

import data.gpuadmit.admission

test_10_denied if count(admission.deny) == 1 with input as {"pod": {"name": "p"}, "demand": {"effective": {"gpumem": 10}}}
`
)

// clusterLine is what eval says with factor2 and perPodCap installed.
const clusterLine = "kubectl gpuadmit eval: configuration from ConfigMap gpuadmit-system/gpuadmit-config; " +
	"policies: built-in + ConfigMap gpuadmit-system/gpuadmit-policy (2 modules)\n" + decidedLocally

// evalWithEffective is eval's JSON for one pod, with its effective gpumem.
type evalWithEffective struct {
	evalJSON
	Effective struct {
		GPUMem int64 `json:"gpumem"`
	} `json:"effective"`
}

// testEvalClusterConfig installs gpuadmit's configuration (memoryFactor 2)
// and a policy ConfigMap, restarts the webhook with that configuration, and
// checks that live eval gives the webhook's verdict and demand, says which
// ConfigMaps it used, and that --config, --policy and
// --gpuadmit-namespace replace them.
func (s *suite) testEvalClusterConfig(t *testing.T) {
	ctx := t.Context()
	cfg, _, err := config.Parse([]byte(factor2))
	if err != nil {
		t.Fatal(err)
	}
	s.install(t, cfg,
		configMap("gpuadmit-config", nil, map[string]string{"config.yaml": factor2}),
		configMap("gpuadmit-policy", map[string]string{"gpuadmit.io/policy": "true"},
			map[string]string{"per-pod-cap.rego": perPodCap, "per-pod-cap_test.rego": perPodCapTest}))
	t.Run("as the webhook decides", s.testSameVerdict)
	t.Run("flags replace the cluster's", s.testFlagsWin)
	t.Run("usage counts with the cluster's memoryFactor", func(t *testing.T) {
		r := s.plugin(t, "usage", "-n", local.TeamA, "-o", "json")
		var u usageJSON
		if err := json.Unmarshal([]byte(r.stdout), &u); err != nil {
			t.Fatalf("usage: exit %d, stderr %q: %v", r.code, r.stderr, err)
		}
		if a := u.Namespaces[local.TeamA]; a.Used.GPUMem != 2*22528 || a.Limits.GPUMem == nil || *a.Limits.GPUMem != 2*24576 {
			t.Errorf("team-a: %+v, want 45056 of 49152 MiB (memoryFactor 2)", a)
		}
		if want := "kubectl gpuadmit usage: configuration from ConfigMap gpuadmit-system/gpuadmit-config\n"; r.stderr != want {
			t.Errorf("stderr %q, want %q", r.stderr, want)
		}
	})
	t.Run("a policy set the webhook rejects fails eval with its message", func(t *testing.T) {
		s.testRejectedSet(ctx, t)
	})
}

// testSameVerdict: the pod asking 3000 units (6000 MiB) is denied by the
// policy, by eval and by the webhook alike; one asking 1000 is admitted,
// with the same effective demand.
func (s *suite) testSameVerdict(t *testing.T) {
	tests := []struct {
		name        string
		pod         *testpod.Builder
		wantAllowed bool
		wantGPUMem  int64
		wantDenial  string
	}{
		{name: "3000 units are 6000 MiB: over the policy's cap", pod: testpod.New("doubled").NS("default").App("app", testpod.GPU(1), testpod.Mem(3000)),
			wantGPUMem: 6000, wantDenial: `pod "doubled": 6000 MiB of GPU memory; the operators allow at most 4096 MiB per pod`},
		{name: "1000 units are 2000 MiB: admitted", pod: testpod.New("small").NS("default").App("app", testpod.GPU(1), testpod.Mem(1000)),
			wantAllowed: true, wantGPUMem: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := podFile(t, tt.pod.Build())
			eval := s.kubectl(t, nil, "gpuadmit", "eval", "-o", "json", "-f", file)
			var got evalWithEffective
			if err := json.Unmarshal([]byte(eval.stdout), &got); err != nil {
				t.Fatalf("eval: exit %d, stderr %q: %v\n%s", eval.code, eval.stderr, err, eval.stdout)
			}
			if got.Allowed != tt.wantAllowed || got.Effective.GPUMem != tt.wantGPUMem || eval.stderr != clusterLine {
				t.Fatalf("eval: exit %d, allowed %v, gpumem %d, stderr %q; want allowed %v, gpumem %d, stderr %q",
					eval.code, got.Allowed, got.Effective.GPUMem, eval.stderr, tt.wantAllowed, tt.wantGPUMem, clusterLine)
			}
			if tt.wantDenial != "" && !slices.Contains(got.Denials, tt.wantDenial) {
				t.Errorf("denials %q lack %q", got.Denials, tt.wantDenial)
			}
			create := s.kubectl(t, nil, "create", "--dry-run=server", "-f", file, "-o", "json")
			if (create.code == 0) != tt.wantAllowed {
				t.Fatalf("kubectl create: exit %d, stderr %q; eval said allowed=%v", create.code, create.stderr, got.Allowed)
			}
			for _, d := range got.Denials {
				if !strings.Contains(create.stderr, d) {
					t.Errorf("the webhook's answer %q lacks eval's denial %q", create.stderr, d)
				}
			}
			if tt.wantAllowed {
				var pod corev1.Pod
				if err := json.Unmarshal([]byte(create.stdout), &pod); err != nil {
					t.Fatal(err)
				}
				if want := `{"gpu":1,"gpumem":2000,"gpucores":0}`; pod.Annotations["gpuadmit.io/effective"] != want {
					t.Errorf("the webhook's effective demand %q, want %q as eval's", pod.Annotations["gpuadmit.io/effective"], want)
				}
			}
		})
	}
}

// testFlagsWin: --config and --policy replace the cluster's configuration
// and policies, and --gpuadmit-namespace where they are read; each said.
func (s *suite) testFlagsWin(t *testing.T) {
	dir := t.TempDir()
	cfgFile, policyDir := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "policies")
	if err := os.WriteFile(cfgFile, []byte("apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(policyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	frozen := "package gpuadmit.admission\n\ndeny contains \"namespace frozen: GPU pods are frozen\" if input.namespace == \"frozen\"\n"
	if err := os.WriteFile(filepath.Join(policyDir, "frozen.rego"), []byte(frozen), 0o600); err != nil {
		t.Fatal(err)
	}
	file := podFile(t, testpod.New("doubled").NS("default").App("app", testpod.GPU(1), testpod.Mem(3000)).Build())
	tests := []struct {
		name        string
		args        []string
		wantAllowed bool
		wantGPUMem  int64
		wantLine    string
	}{
		{name: "--config and --policy", args: []string{"--config", cfgFile, "--policy", policyDir}, wantAllowed: true, wantGPUMem: 3000,
			wantLine: "kubectl gpuadmit eval: configuration from --config " + cfgFile + "; policies: built-in + --policy " + policyDir + "\n" + decidedLocally},
		{name: "--policy alone: the cluster's memoryFactor, not its policy", args: []string{"--policy", policyDir}, wantAllowed: true, wantGPUMem: 6000,
			wantLine: "kubectl gpuadmit eval: configuration from ConfigMap gpuadmit-system/gpuadmit-config; policies: built-in + --policy " + policyDir + "\n" + decidedLocally},
		{name: "--config alone: the cluster's policy, not its memoryFactor", args: []string{"--config", cfgFile}, wantAllowed: true, wantGPUMem: 3000,
			wantLine: "kubectl gpuadmit eval: configuration from --config " + cfgFile +
				"; policies: built-in + ConfigMap gpuadmit-system/gpuadmit-policy (2 modules)\n" + decidedLocally},
		{name: "--gpuadmit-namespace where gpuadmit is not", args: []string{"--gpuadmit-namespace", "elsewhere"}, wantAllowed: true, wantGPUMem: 3000,
			wantLine: "kubectl gpuadmit eval: configuration: the defaults (no ConfigMap elsewhere/gpuadmit-config; is gpuadmit installed in another namespace? --gpuadmit-namespace); " +
				"policies: built-in (no ConfigMap of elsewhere matches gpuadmit.io/policy=true)\n" + decidedLocally},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eval := s.kubectl(t, nil, append([]string{"gpuadmit", "eval", "-o", "json", "-f", file}, tt.args...)...)
			var got evalWithEffective
			if err := json.Unmarshal([]byte(eval.stdout), &got); err != nil {
				t.Fatalf("eval: exit %d, stderr %q: %v", eval.code, eval.stderr, err)
			}
			if got.Allowed != tt.wantAllowed || got.Effective.GPUMem != tt.wantGPUMem || eval.stderr != tt.wantLine {
				t.Errorf("eval: allowed %v, gpumem %d, stderr %q; want %v, %d, %q", got.Allowed, got.Effective.GPUMem, eval.stderr, tt.wantAllowed, tt.wantGPUMem, tt.wantLine)
			}
		})
	}
}

// testRejectedSet replaces the policy ConfigMap's test by one its policy
// fails: the webhook rejects the set (its status annotation says why) and
// eval fails, exit 2, with that reason.
func (s *suite) testRejectedSet(ctx context.Context, t *testing.T) {
	cms := s.c.Kube.CoreV1().ConfigMaps(local.Namespace)
	cm, err := cms.Get(ctx, "gpuadmit-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["per-pod-cap_test.rego"] = brokenTest
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var status string
	for deadline := time.Now().Add(20 * time.Second); !strings.HasPrefix(status, "rejected: ") && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cm, err = cms.Get(ctx, "gpuadmit-policy", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		status = cm.Annotations[policysync.StatusAnnotation]
	}
	// "rejected: policy set rejected (active revision R stays in force): WHY; still active: revision R"
	_, why, _ := strings.Cut(status, "stays in force): ")
	why, _, _ = strings.Cut(why, "; still active: revision ")
	if why == "" || !strings.Contains(why, "test_10_denied") {
		t.Fatalf("the webhook's status annotation %q does not reject the set for its test", status)
	}
	file := podFile(t, testpod.New("small").NS("default").App("app", testpod.GPU(1), testpod.Mem(1000)).Build())
	eval := s.kubectl(t, nil, "gpuadmit", "eval", "-f", file)
	t.Logf("the webhook: %s\neval: exit %d\n%s", status, eval.code, eval.stderr)
	if eval.code != 2 || eval.stdout != "" || !strings.Contains(eval.stderr, "the cluster's policy set is rejected, as the webhook rejects it") ||
		!strings.Contains(eval.stderr, why) {
		t.Errorf("eval: exit %d, stdout %q, stderr %q; want exit 2 and the webhook's reason %q", eval.code, eval.stdout, eval.stderr, why)
	}
}

// configMap is a ConfigMap of the webhook's namespace.
func configMap(name string, labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: local.Namespace, Labels: labels}, Data: data}
}

// install creates gpuadmit's ConfigMaps and restarts the webhook with cfg,
// their configuration; when the test ends, it deletes them and restarts
// the webhook with the suite's defaults.
func (s *suite) install(t *testing.T, cfg *config.Configuration, cms ...*corev1.ConfigMap) {
	t.Helper()
	api := s.c.Kube.CoreV1().ConfigMaps(local.Namespace)
	restart := func(ctx context.Context, o server.Options) error {
		if err := s.c.StopWebhook(); err != nil {
			return err
		}
		return s.c.StartWebhook(ctx, o)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, cm := range cms {
			if err := api.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting ConfigMap %s: %v", cm.Name, err)
			}
		}
		if err := restart(ctx, s.c.Options()); err != nil {
			t.Errorf("restarting the webhook with the defaults: %v", err)
		}
	})
	for _, cm := range cms {
		if _, err := api.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := s.c.Options()
	o.Config = cfg
	if err := restart(t.Context(), o); err != nil {
		t.Fatal(err)
	}
}
