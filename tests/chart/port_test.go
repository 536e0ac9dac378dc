package chart_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClosedPortInstructions renders the chart with the flags of
// docs/webhook.md's mutual TLS instructions (the block after the
// closed-port marker): the replicas get the client CA flag and the CA, and
// the NetworkPolicy admits the webhook port only from the CIDR given and
// the other replicas. Instructions that no longer render so fail here.
func TestClosedPortInstructions(t *testing.T) {
	args := documentedFlags(t)
	ca := writeValues(t, exampleCA(t))
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "=client-ca.crt", "="+ca)
	}
	objs := render(t, args...)
	flags := webhookArgs(t, objs)
	if !strings.Contains(strings.Join(flags, " "), "--client-ca-file=/client-ca/ca.crt") {
		t.Errorf("the documented flags render the webhook's args %v, without --client-ca-file", flags)
	}
	checkClientCAMount(t, objs, "gpuadmit-client-ca")
	if got := nested(t, find(objs, "ConfigMap", "gpuadmit-client-ca"), "data", "ca.crt"); !strings.HasPrefix(got, "-----BEGIN CERTIFICATE-----") {
		t.Errorf("the client CA ConfigMap holds %q", got)
	}
	got := ingress(find(objs, "NetworkPolicy", "gpuadmit-webhook"))
	if len(got) < 2 || got[0] != "9443 from 10.0.0.10/32" || got[1] != "9443 from pod app.kubernetes.io/name=gpuadmit-webhook" {
		t.Errorf("the NetworkPolicy admits %q; want the webhook port from 10.0.0.10/32 and the replicas only", got)
	}
}

// TestKonnectivityAgentsAdmitted: with networkPolicy.apiServer.konnectivity
// on, the webhook port admits the konnectivity agents of kube-system (and
// the CIDRs given) and nothing else; "auto" where helm finds none (helm
// template reads no cluster) leaves it open, as the install notes then say.
func TestKonnectivityAgentsAdmitted(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "networkPolicy.apiServer.konnectivity=true"},
			"9443 from namespace kubernetes.io/metadata.name=kube-system and pod k8s-app=konnectivity-agent"},
		{[]string{"--set", "networkPolicy.apiServer.konnectivity=true", "--set", "networkPolicy.apiServer.cidrs={172.16.0.0/28}"},
			"9443 from 172.16.0.0/28 or namespace kubernetes.io/metadata.name=kube-system and pod k8s-app=konnectivity-agent"},
		{nil, "9443 from any"},
	} {
		if got := ingress(find(render(t, tc.args...), "NetworkPolicy", "gpuadmit-webhook"))[0]; got != tc.want {
			t.Errorf("%v: the webhook port admits %q, want %q", tc.args, got, tc.want)
		}
	}
}

// documentedFlags are the helm flags of docs/webhook.md's closed-port
// block (after the chart's path).
func documentedFlags(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/webhook.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- closed-port:[^>]*-->\\s*```sh\\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/webhook.md has no closed-port block")
	}
	words := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))
	var flags []string
	for i := 0; i < len(words); i++ {
		if w := words[i]; (w == "--set" || w == "--set-file") && i+1 < len(words) {
			flags = append(flags, w, strings.Trim(words[i+1], "'"))
			i++
		}
	}
	if len(flags) == 0 {
		t.Fatalf("no --set flags in %q", m[1])
	}
	return flags
}

// exampleCA is the example client CA of ci/client-auth-values.yaml.
func exampleCA(t *testing.T) string {
	t.Helper()
	v, err := os.ReadFile(chartDir + "/ci/client-auth-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----`).Find(v)
	if m == nil {
		t.Fatal("no CA in ci/client-auth-values.yaml")
	}
	lines := strings.Split(string(m), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestKonnectivityDetectedAtInstall: on a cluster whose control plane
// reaches pods through konnectivity (an agent pod in kube-system labelled
// app=konnectivity-agent, as AKS labels them), helm install with the
// default values closes the webhook port to every other pod: the
// NetworkPolicy admits it from those agents and the replicas only, and the
// notes do not warn. An agent on the host network is not admitted by a pod
// selector: then nothing is found and the notes warn.
func TestKonnectivityDetectedAtInstall(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	agent := func(name string, host bool, labels map[string]string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: labels},
			Spec: corev1.PodSpec{HostNetwork: host, Containers: []corev1.Container{{Name: "agent", Image: "konnectivity-agent"}}}}
		if _, err := c.kube.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	agent("on-host", true, map[string]string{"k8s-app": "konnectivity-agent"})
	out := c.helm(t, "install", "gpuadmit", chartDir, "-n", "gpuadmit-system", "--create-namespace", "--set", "crds.keep=false")
	if !strings.Contains(out, "WARNING: the webhook port is open to every pod") {
		t.Errorf("with only a host-network agent the notes do not warn:\n%s", out)
	}
	agent("konnectivity-agent-1", false, map[string]string{"app": "konnectivity-agent"})
	out = c.helm(t, "upgrade", "gpuadmit", chartDir, "-n", "gpuadmit-system", "--reuse-values")
	if strings.Contains(out, "WARNING") || !strings.Contains(out, "the konnectivity agents of kube-system") {
		t.Errorf("with konnectivity agents the notes say:\n%s", out)
	}
	np, err := c.kube.NetworkingV1().NetworkPolicies("gpuadmit-system").Get(ctx, "gpuadmit-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := np.Spec.Ingress[0].From
	if len(from) != 1 || from[0].PodSelector == nil || from[0].PodSelector.MatchLabels["app"] != "konnectivity-agent" ||
		from[0].NamespaceSelector == nil || from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kube-system" {
		t.Errorf("the webhook port admits %+v, want the konnectivity agents of kube-system only", from)
	}
}
