package chart_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/internal/manifestgen"
	"github.com/gpuadmit/gpuadmit/internal/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
)

// TestLint: helm lint passes with the default values and each values file
// of ci/.
func TestLint(t *testing.T) {
	for _, values := range []string{"", "ci/cert-manager-values.yaml", "ci/renamed-resources-values.yaml", "ci/agent-disabled-values.yaml"} {
		args := []string{"lint", chartDir, "--strict"}
		if values != "" {
			args = append(args, "-f", chartDir+"/"+values)
		}
		out, err := exec.Command(helmBin(t), args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "0 chart(s) failed") {
			t.Errorf("helm lint %s: %v\n%s", values, err, out)
		}
	}
}

// TestRender: what each mode renders.
func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		want, never []string // Kind/name
		check       func(*testing.T, []*unstructured.Unstructured)
	}{
		{name: "default values",
			want: []string{"Deployment/gpuadmit-webhook", "Secret/gpuadmit-webhook-tls", "DaemonSet/gpuadmit-nvml-agent",
				"ValidatingAdmissionPolicy/gpuadmit-nvml-agent-own-node", "CustomResourceDefinition/gpuusages.gpuadmit.io",
				"PodDisruptionBudget/gpuadmit-webhook", "ClusterRole/gpuadmit-gpuusage-view", "ConfigMap/gpuadmit-policy"},
			never: []string{"Certificate/gpuadmit-webhook", "ServiceMonitor/gpuadmit-webhook", "Namespace/gpuadmit-system"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				d := find(objs, "Deployment", "gpuadmit-webhook")
				if n := num(d, "spec", "replicas"); n != 3 {
					t.Errorf("replicas %d, want 3", n)
				}
				crd := find(objs, "CustomResourceDefinition", "gpuusages.gpuadmit.io")
				if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
					t.Errorf("the CRD is not kept on uninstall by default: %v", crd.GetAnnotations())
				}
			}},
		{name: "cert-manager", args: []string{"-f", chartDir + "/ci/cert-manager-values.yaml"},
			want:  []string{"Certificate/gpuadmit-webhook", "Issuer/gpuadmit-selfsigned"},
			never: []string{"Secret/gpuadmit-webhook-tls"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				d := find(objs, "Deployment", "gpuadmit-webhook")
				cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
				if !slices.Contains(args, "--cert-dir=/tls") {
					t.Errorf("the webhook does not read cert-manager's certificate: %v", args)
				}
				for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
					if got := find(objs, kind, "gpuadmit").GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "gpuadmit-system/gpuadmit-webhook" {
						t.Errorf("%s: inject-ca-from %q", kind, got)
					}
				}
			}},
		{name: "agent disabled, two replicas, metrics objects", args: []string{"-f", chartDir + "/ci/agent-disabled-values.yaml"},
			want:  []string{"ServiceMonitor/gpuadmit-webhook", "PrometheusRule/gpuadmit", "ConfigMap/gpuadmit-dashboard"},
			never: []string{"DaemonSet/gpuadmit-nvml-agent", "ValidatingAdmissionPolicy/gpuadmit-nvml-agent-own-node", "ServiceAccount/gpuadmit-nvml-agent"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				groups, _, _ := unstructured.NestedSlice(find(objs, "PrometheusRule", "gpuadmit").Object, "spec", "groups")
				if len(groups) == 0 {
					t.Error("the PrometheusRule has no rule group")
				}
				if dash := nested(t, find(objs, "ConfigMap", "gpuadmit-dashboard"), "data", "gpuadmit.json"); !strings.Contains(dash, `"uid"`) {
					t.Error("the dashboard ConfigMap holds no dashboard")
				}
			}},
		{name: "operator policies and a custom selector", args: []string{"--set-string", "config.policy.configMapSelector=team=ml\\,gpuadmit.io/policy=true",
			"--set-file", "policies.max-gpus-per-pod\\.rego=../../examples/policy/max-gpus-per-pod.rego"},
			want: []string{"ConfigMap/gpuadmit-policy"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				cm := find(objs, "ConfigMap", "gpuadmit-policy")
				if l := cm.GetLabels(); l["team"] != "ml" || l["gpuadmit.io/policy"] != "true" {
					t.Errorf("the policy ConfigMap's labels %v do not match the selector", l)
				}
				if rego := nested(t, cm, "data", "max-gpus-per-pod.rego"); !strings.Contains(rego, "package gpuadmit.admission") {
					t.Errorf("max-gpus-per-pod.rego is not rendered: %q", rego)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.args...)
			for _, w := range tc.want {
				kind, name, _ := strings.Cut(w, "/")
				if find(objs, kind, name) == nil {
					t.Errorf("%s is not rendered; rendered: %s", w, kinds(objs))
				}
			}
			for _, n := range tc.never {
				kind, name, _ := strings.Cut(n, "/")
				if find(objs, kind, name) != nil {
					t.Errorf("%s is rendered", n)
				}
			}
			if tc.check != nil && !t.Failed() {
				tc.check(t, objs)
			}
		})
	}
}

// TestSchemaRefusesBadValues: a wrong type, an unknown key or a value out
// of range fails with a message naming it.
func TestSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"replicas=three", "/replicas"},
		{"bogus=1", "'bogus' not allowed"},
		{"config.admission.staleFeed=Sometimes", "/config/admission/staleFeed"},
		{"config.admission.unknownKey=1", "'unknownKey' not allowed"},
		{"webhook.timeoutSeconds=60", "/webhook/timeoutSeconds"},
		{"webhook.failurePolicy=Maybe", "/webhook/failurePolicy"},
		{"certificates.mode=letsencrypt", "/certificates/mode"},
		{"config.devices.nvidia.resourceMemoryName=bad name", "/config/devices/nvidia/resourceMemoryName"},
		{"config.admission.reviewTimeout=soon", "/config/admission/reviewTimeout"},
		{"config.policy.configMapSelector=team in (a)", "config.policy.configMapSelector"},
	} {
		_, err := manifestgen.Render(context.Background(), helmBin(t), chartDir, "--set", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v, want an error naming %s", tc.set, err, tc.want)
		}
	}
}

// TestResourceNamesHaveOneSource: with renamed resources the rendered
// configuration, which the server validates, and the webhooks'
// matchConditions, which the API server evaluates, name the same resources:
// a pod asking for the renamed ones reaches both webhooks, a pod asking for
// nvidia.com/gpu reaches neither.
func TestResourceNamesHaveOneSource(t *testing.T) {
	objs := render(t, "-f", chartDir+"/ci/renamed-resources-values.yaml")
	cfgYAML := nested(t, find(objs, "ConfigMap", "gpuadmit-config"), "data", "config.yaml")
	cfg, ignored, err := config.Parse([]byte(cfgYAML))
	if err != nil || len(ignored) > 0 {
		t.Fatalf("the rendered configuration is not one the server accepts: %v (ignored %v)\n%s", err, ignored, cfgYAML)
	}
	n := cfg.Devices.Names
	want := []string{string(n.Count), string(n.Memory), string(n.MemoryPercentage), string(n.Cores)}
	if want[0] != "example.com/vgpu" || want[1] != "example.com/vmem" {
		t.Fatalf("the configuration names %v", want)
	}
	var hooks []string
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		h := find(objs, kind, "gpuadmit")
		expr := nested(t, &unstructured.Unstructured{Object: h.Object["webhooks"].([]any)[0].(map[string]any)["matchConditions"].([]any)[0].(map[string]any)}, "expression")
		for _, list := range regexp.MustCompile(`\[('[^\]]*)\]`).FindAllStringSubmatch(expr, -1) {
			var got []string
			for _, q := range strings.Split(list[1], ", ") {
				got = append(got, strings.Trim(q, "'"))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s matchConditions name %v, the configuration %v", kind, got, want)
			}
		}
		hooks = append(hooks, yamlOf(t, h))
	}
	m, err := matchcond.Load([]byte(strings.Join(hooks, "---\n")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pod  *testpod.Builder
		want int
	}{
		{"renamed resources", testpod.New("p").NS("team-a").App("c", testpod.Res("example.com/vgpu", "1"), testpod.Res("example.com/vmem", "1024")), 2},
		{"renamed cores in an init container", testpod.New("p").NS("team-a").Init("i", testpod.Res("example.com/vcores", "30")).App("c"), 2},
		{"nvidia.com names", testpod.New("p").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(1024)), 0},
	} {
		_, called, err := m.Consulted(context.Background(), tc.pod.Build())
		if err != nil || len(called) != tc.want {
			t.Errorf("%s: reaches %v (%v), want %d webhooks", tc.name, called, err, tc.want)
		}
	}
}

// TestImagesHaveOnePlace: `make image` tags the images the chart deploys.
func TestImagesHaveOnePlace(t *testing.T) {
	out, err := exec.Command("make", "-s", "-C", "../..", "print-images").CombinedOutput()
	if err != nil {
		t.Fatalf("make print-images: %v\n%s", err, out)
	}
	objs := render(t)
	var rendered []string
	for _, o := range []*unstructured.Unstructured{find(objs, "Deployment", "gpuadmit-webhook"), find(objs, "DaemonSet", "gpuadmit-nvml-agent")} {
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		rendered = append(rendered, cs[0].(map[string]any)["image"].(string))
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, rendered) {
		t.Errorf("make image builds %v, the chart deploys %v", got, rendered)
	}
}

// TestImageUserMatchesTheChart: the images run as the user the chart's
// securityContext names.
func TestImageUserMatchesTheChart(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)$`).FindAllStringSubmatch(string(b), -1)
	if len(users) != 2 {
		t.Fatalf("want a USER in each of the two image stages, found %v", users)
	}
	objs := render(t)
	for _, o := range []*unstructured.Unstructured{find(objs, "Deployment", "gpuadmit-webhook"), find(objs, "DaemonSet", "gpuadmit-nvml-agent")} {
		uid := num(o, "spec", "template", "spec", "securityContext", "runAsUser")
		gid := num(o, "spec", "template", "spec", "securityContext", "runAsGroup")
		for _, u := range users {
			if u[1] != strings.Join([]string{itoa(uid), itoa(gid)}, ":") {
				t.Errorf("%s runs as %d:%d, the Dockerfile says USER %s", o.GetName(), uid, gid, u[1])
			}
		}
	}
}
