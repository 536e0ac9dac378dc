// Package readme_test follows the README as a new user would, literally:
// on a real control plane with the webhook, it applies the README's
// ResourceQuota and first policy as written, runs every command of its
// "Try it" session through the real kubectl, and checks that each prints
// what the README shows (the AGE column and "..." aside).
//
// Without a cluster it checks the rest of the docs stay true:
// TestDocCommands runs every command of the README and docs/ that needs no
// cluster, as written, and compares its output with what the doc shows;
// TestDocFacts, TestConfigurationDefaults and TestValuesConfigIsTheDefaults
// compare the defaults the docs name in prose with the chart's values.yaml
// and Chart.yaml, the Makefile and the configuration's defaults
// (SetDefaults); TestChartValuesNamed checks every chart value the docs
// name exists.
//
// Without KUBEBUILDER_ASSETS the cluster tests (and helm template) skip,
// unless GPUADMIT_REQUIRE_ENVTEST=1 (make integration), where they fail
// instead.
package readme_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// step is one "$ command" of a console block and the lines shown after it.
type step struct {
	command string
	want    []string
}

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// block returns the first fenced block of lang containing marker.
func block(t *testing.T, doc, lang, marker string) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		if strings.Contains(m[1], marker) {
			return m[1]
		}
	}
	t.Fatalf("the README has no %s block with %q", lang, marker)
	return ""
}

// steps splits a console block into its commands and their output.
func steps(console string) []step {
	var out []step
	for _, line := range strings.Split(strings.TrimRight(console, "\n"), "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			if i := strings.Index(cmd, "  #"); i >= 0 {
				cmd = cmd[:i]
			}
			out = append(out, step{command: strings.TrimSpace(cmd)})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].want = append(out[len(out)-1].want, line)
		}
	}
	return out
}

// TestReadmeLiterally: the README's quota, policy and session, as written.
func TestReadmeLiterally(t *testing.T) {
	doc := readme(t)
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	ctx := t.Context()
	if err := c.CreateNamespace(ctx, "team-a", nil); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: local.NodeName, Labels: map[string]string{"kubernetes.io/hostname": local.NodeName},
		Annotations: map[string]string{"gpuadmit.io/gpu-devices": local.NodeDevices}}}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quota := block(t, doc, "yaml", "kind: ResourceQuota")
	if _, stderr, err := c.Kubectl(ctx, []byte(quota), "apply", "-f", "-"); err != nil {
		t.Fatalf("the README's ResourceQuota: %v: %s", err, stderr)
	}
	local.AwaitLedger(t, c, "team-a", func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
	t.Chdir("../..") // the README's commands run from the repository's root
	session := steps(block(t, doc, "console", "kubectl apply --dry-run=server"))
	if len(session) < 3 {
		t.Fatalf("the README's session has %d commands, want at least 3", len(session))
	}
	for _, s := range session {
		args := strings.Fields(s.command)
		if args[0] != "kubectl" {
			t.Fatalf("README command %q is not kubectl", s.command)
		}
		var got string
		for attempt := 0; attempt < 100; attempt++ { // the summary is written within a second or two
			stdout, stderr, _ := c.Kubectl(ctx, nil, args[1:]...)
			got = stdout + stderr
			if shows(got, s.want) || !strings.Contains(s.command, "get gpuusage") {
				break
			}
			<-afterTick()
		}
		if !shows(got, s.want) {
			t.Errorf("README: $ %s\nshows\n%s\nkubectl printed\n%s", s.command, strings.Join(s.want, "\n"), got)
		}
	}
	policyCase(t, c, doc)
}

// policyCase applies the README's first policy as written and checks that a
// GPU pod without the label it asks for is denied with its message.
func policyCase(t *testing.T, c *local.Cluster, doc string) {
	t.Helper()
	ctx := t.Context()
	cm := block(t, doc, "yaml", "kind: ConfigMap")
	if _, stderr, err := c.Kubectl(ctx, []byte(cm), "apply", "-f", "-"); err != nil {
		t.Fatalf("the README's policy: %v: %s", err, stderr)
	}
	msg := regexp.MustCompile(`sprintf\("pod %q: ([^"]+)"`).FindStringSubmatch(cm)
	if msg == nil {
		t.Fatal("the README's policy has no message")
	}
	var got string
	for attempt := 0; attempt < 100 && !strings.Contains(got, msg[1]); attempt++ { // the policy sync loads it within seconds
		stdout, stderr, _ := c.Kubectl(ctx, nil, "apply", "--dry-run=server", "-f", "examples/pods/scenario4-app12.yaml")
		got = stdout + stderr
		<-afterTick()
	}
	local.MustContain(t, "a GPU pod without a cost-center label, with the README's policy", got, "denied", msg[1])
}

// shows reports whether got holds every line of want, in order, with
// whitespace collapsed, an AGE column's values and "..." left out (a wrapped
// line of want continues on the next).
func shows(got string, want []string) bool {
	norm := func(s string) string {
		var out []string
		for _, f := range strings.Fields(s) {
			if !age.MatchString(f) {
				out = append(out, f)
			}
		}
		return strings.Join(out, " ")
	}
	g := norm(got)
	for _, part := range strings.Split(strings.Join(want, " "), "...") {
		p := norm(part)
		i := strings.Index(g, p)
		if i < 0 {
			return false
		}
		g = g[i+len(p):]
	}
	return true
}

var age = regexp.MustCompile(`^\d+(s|m|h|d)$`)

func afterTick() <-chan time.Time { return time.After(200 * time.Millisecond) }
