package chart_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// hamiTestdata holds HAMi's device configs as HAMi's charts render them.
const hamiTestdata = "../../pkg/config/testdata"

// hamiRendered is the device-config.yaml HAMi's chart renders with its
// default values (its header says how it was produced).
const hamiRendered = hamiTestdata + "/hami-chart-rendered.yaml"

// pasteUnderDevices writes a values file holding the HAMi device config
// file pasted, as it is, under config.devices, and returns its path.
func pasteUnderDevices(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	out.WriteString("config:\n  devices:\n")
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			out.WriteString("    " + line)
		}
		out.WriteString("\n")
	}
	return writeValues(t, out.String())
}

// TestPodDisruptionBudget: no budget with one replica; maxUnavailable 1 by
// default; minAvailable or maxUnavailable (a number or a percentage) when
// set.
func TestPodDisruptionBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want map[string]any // the budget's spec but its selector; nil: no budget
	}{
		{"one replica", []string{"--set", "replicas=1"}, nil},
		{"one replica, minAvailable 1", []string{"--set", "replicas=1", "--set", "podDisruptionBudget.minAvailable=1"}, nil},
		{"two replicas", []string{"--set", "replicas=2"}, map[string]any{"maxUnavailable": int64(1)}},
		{"default values", nil, map[string]any{"maxUnavailable": int64(1)}},
		{"maxUnavailable 2", []string{"--set", "replicas=5", "--set", "podDisruptionBudget.maxUnavailable=2"}, map[string]any{"maxUnavailable": int64(2)}},
		{"maxUnavailable a percentage", []string{"--set", "podDisruptionBudget.maxUnavailable=34%"}, map[string]any{"maxUnavailable": "34%"}},
		{"minAvailable below replicas", []string{"--set", "podDisruptionBudget.minAvailable=2"}, map[string]any{"minAvailable": int64(2)}},
		{"minAvailable from a values file", []string{"-f", writeValues(t, "replicas: 4\npodDisruptionBudget:\n  minAvailable: 3\n")},
			map[string]any{"minAvailable": int64(3)}},
		{"minAvailable a percentage", []string{"--set", "podDisruptionBudget.minAvailable=66%"}, map[string]any{"minAvailable": "66%"}},
		{"disabled", []string{"--set", "podDisruptionBudget.enabled=false"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := find(render(t, tc.args...), "PodDisruptionBudget", "gpuadmit-webhook")
			if tc.want == nil {
				if pdb != nil {
					t.Fatalf("a PodDisruptionBudget is rendered: %s", yamlOf(t, pdb))
				}
				return
			}
			if pdb == nil {
				t.Fatal("no PodDisruptionBudget is rendered")
			}
			spec, _, _ := unstructured.NestedMap(pdb.Object, "spec")
			sel, _, _ := unstructured.NestedStringMap(spec, "selector", "matchLabels")
			delete(spec, "selector")
			if !equality.Semantic.DeepEqual(normalize(spec), tc.want) {
				t.Errorf("the budget is %v, want %v", spec, tc.want)
			}
			if want := map[string]string{"app.kubernetes.io/name": "gpuadmit-webhook"}; !equality.Semantic.DeepEqual(sel, want) {
				t.Errorf("the budget selects %v, want %v", sel, want)
			}
		})
	}
}

// normalize turns YAML's float64 numbers of m into int64.
func normalize(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			v = int64(f)
		}
		out[k] = v
	}
	return out
}

// TestPodWiring: pod annotations and labels, extra arguments and
// environment variables, the host network, the ports (and everything that
// follows them: arguments, probes, Service, NetworkPolicy, ServiceMonitor)
// and the security contexts, on the webhook Deployment and the agent's
// DaemonSet.
func TestPodWiring(t *testing.T) {
	values := writeValues(t, `
podAnnotations: {example.com/owner: team-ml}
podLabels: {team: ml, app.kubernetes.io/part-of: gpuadmit}
extraArgs: ["--cert-check-interval=5m", "-v=1"]
extraEnv: [{name: HTTPS_PROXY, value: "http://proxy:3128"}]
hostNetwork: true
ports: {webhook: 9543, metrics: 9580, probes: 9581}
metrics:
  serviceMonitor: {enabled: true}
agent:
  podAnnotations: {example.com/owner: infra}
  podLabels: {tier: node}
  extraArgs: [--nvml-library=/usr/lib64/libnvidia-ml.so.1]
  extraEnv: [{name: NVIDIA_VISIBLE_DEVICES_EXTRA, value: "x"}]
`)
	objs := render(t, "-f", values)
	d := find(objs, "Deployment", "gpuadmit-webhook")
	pod, c := webhookPod(t, objs)
	tmpl, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "metadata")
	ann, _, _ := unstructured.NestedStringMap(tmpl, "annotations")
	if ann["example.com/owner"] != "team-ml" || ann["checksum/config"] == "" {
		t.Errorf("the webhook pods' annotations %v lack podAnnotations or checksum/config", ann)
	}
	labels, _, _ := unstructured.NestedStringMap(tmpl, "labels")
	if labels["team"] != "ml" || labels["app.kubernetes.io/name"] != "gpuadmit-webhook" || labels["app.kubernetes.io/part-of"] != "gpuadmit" {
		t.Errorf("the webhook pods' labels %v lack podLabels or the chart's", labels)
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if n := len(args); n < 2 || !slices.Equal(args[n-2:], []string{"--cert-check-interval=5m", "-v=1"}) {
		t.Errorf("the webhook's args %v do not end with extraArgs", args)
	}
	for _, want := range []string{"--port=9543", "--metrics-bind-address=:9580", "--health-probe-bind-address=:9581"} {
		if !slices.Contains(args, want) {
			t.Errorf("the webhook's args %v lack %s", args, want)
		}
	}
	if env := envOf(c); env["HTTPS_PROXY"] != "http://proxy:3128" || !has(env, "POD_IP") {
		t.Errorf("the webhook's env %v lacks extraEnv or the chart's", env)
	}
	if pod["hostNetwork"] != true || pod["dnsPolicy"] != "ClusterFirstWithHostNet" {
		t.Errorf("hostNetwork %v, dnsPolicy %v: want true, ClusterFirstWithHostNet", pod["hostNetwork"], pod["dnsPolicy"])
	}
	if got, want := containerPorts(c), map[string]int64{"webhook": 9543, "metrics": 9580, "probes": 9581}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the webhook's container ports %v, want %v", got, want)
	}
	for probe, port := range map[string]string{"readinessProbe": "probes", "livenessProbe": "probes"} {
		if got, _, _ := unstructured.NestedString(c, probe, "httpGet", "port"); got != port {
			t.Errorf("%s probes port %q, want %q", probe, got, port)
		}
	}
	svc := find(objs, "Service", "gpuadmit-webhook")
	sps, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	var svcPorts []string
	for _, p := range sps {
		p := p.(map[string]any)
		svcPorts = append(svcPorts, fmt.Sprintf("%v %v->%v", p["name"], p["port"], p["targetPort"]))
	}
	if want := []string{"webhook 443->webhook", "metrics 9580->metrics"}; !slices.Equal(svcPorts, want) {
		t.Errorf("the Service's ports %v, want %v", svcPorts, want)
	}
	if got, want := ingress(find(objs, "NetworkPolicy", "gpuadmit-webhook")), []string{"9543 from any", "9543 from pod app.kubernetes.io/name=gpuadmit-webhook",
		"9580 from namespace kubernetes.io/metadata.name=monitoring", "9581 from any"}; !slices.Equal(got, want) {
		t.Errorf("the NetworkPolicy admits %q, want %q", got, want)
	}
	scrapeEndpoint(t, objs) // the named metrics port of the Service

	ds := find(objs, "DaemonSet", "gpuadmit-nvml-agent")
	atmpl, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "metadata")
	if a, _, _ := unstructured.NestedStringMap(atmpl, "annotations"); a["example.com/owner"] != "infra" {
		t.Errorf("the agent pods' annotations %v lack agent.podAnnotations", a)
	}
	if l, _, _ := unstructured.NestedStringMap(atmpl, "labels"); l["tier"] != "node" || l["app.kubernetes.io/name"] != "gpuadmit-nvml-agent" {
		t.Errorf("the agent pods' labels %v lack agent.podLabels or the chart's", l)
	}
	acs, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	ac := acs[0].(map[string]any)
	if aargs, _, _ := unstructured.NestedStringSlice(ac, "args"); aargs[len(aargs)-1] != "--nvml-library=/usr/lib64/libnvidia-ml.so.1" {
		t.Errorf("the agent's args %v do not end with agent.extraArgs", aargs)
	}
	if env := envOf(ac); env["NVIDIA_VISIBLE_DEVICES_EXTRA"] != "x" || env["NVIDIA_DRIVER_CAPABILITIES"] != "utility" {
		t.Errorf("the agent's env %v lacks agent.extraEnv or the chart's", env)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(ds.Object, "spec", "template", "spec", "hostNetwork"); ok {
		t.Error("hostNetwork is the webhook's: the agent does not use it")
	}
}

// TestSecurityContexts: the defaults are the pods' and containers' of
// before; a key set to null is left out (OpenShift: no runAsUser and
// runAsGroup, restricted-v2 assigns them), and the containers' context can
// be replaced.
func TestSecurityContexts(t *testing.T) {
	podDefault := map[string]any{"runAsNonRoot": true, "runAsUser": float64(65532), "runAsGroup": float64(65532),
		"seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	containerDefault := map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
		"capabilities": map[string]any{"drop": []any{"ALL"}}}
	openShift := map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	for _, tc := range []struct {
		name           string
		args           []string
		pod, container map[string]any // of both workloads; nil: none
	}{
		{"defaults", nil, podDefault, containerDefault},
		{"OpenShift, from a values file", []string{"-f", writeValues(t, `
podSecurityContext: {runAsUser: null, runAsGroup: null}
agent:
  podSecurityContext: {runAsUser: null, runAsGroup: null}
`)}, openShift, containerDefault},
		{"OpenShift, with --set", []string{"--set", "podSecurityContext.runAsUser=null,podSecurityContext.runAsGroup=null",
			"--set", "agent.podSecurityContext.runAsUser=null,agent.podSecurityContext.runAsGroup=null"}, openShift, containerDefault},
		{"an fsGroup added, the container's context replaced", []string{"-f", writeValues(t, `
podSecurityContext: {fsGroup: 65532}
securityContext: {readOnlyRootFilesystem: null, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
agent:
  podSecurityContext: {fsGroup: 65532}
  securityContext: {readOnlyRootFilesystem: null, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
`)}, map[string]any{"runAsNonRoot": true, "runAsUser": float64(65532), "runAsGroup": float64(65532), "fsGroup": float64(65532),
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_BIND_SERVICE"}}}},
		{"none at all", []string{"--set", "podSecurityContext=null,securityContext=null,agent.podSecurityContext=null,agent.securityContext=null"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.args...)
			for _, o := range []*unstructured.Unstructured{find(objs, "Deployment", "gpuadmit-webhook"), find(objs, "DaemonSet", "gpuadmit-nvml-agent")} {
				pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
				psc, _ := pod["securityContext"].(map[string]any)
				if !equality.Semantic.DeepEqual(psc, tc.pod) {
					t.Errorf("%s: the pod's securityContext %v, want %v", o.GetName(), psc, tc.pod)
				}
				cs, _, _ := unstructured.NestedSlice(pod, "containers")
				csc, _ := cs[0].(map[string]any)["securityContext"].(map[string]any)
				if !equality.Semantic.DeepEqual(csc, tc.container) {
					t.Errorf("%s: the container's securityContext %v, want %v", o.GetName(), csc, tc.container)
				}
			}
		})
	}
}

func envOf(c map[string]any) map[string]string {
	out := map[string]string{}
	env, _, _ := unstructured.NestedSlice(c, "env")
	for _, e := range env {
		e := e.(map[string]any)
		v, _ := e["value"].(string)
		out[e["name"].(string)] = v
	}
	return out
}

func has(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func containerPorts(c map[string]any) map[string]int64 {
	out := map[string]int64{}
	ps, _, _ := unstructured.NestedSlice(c, "ports")
	for _, p := range ps {
		p := p.(map[string]any)
		out[p["name"].(string)] = num(&unstructured.Unstructured{Object: p}, "containerPort")
	}
	return out
}

// TestNamespaceSelector: webhook.namespaceSelector's terms stand beside the
// exclusion by name in every webhook of both configurations.
func TestNamespaceSelector(t *testing.T) {
	objs := render(t, "-f", writeValues(t, `
webhook:
  namespaceSelector:
    matchLabels: {gpu.example.com/tenant: "true"}
    matchExpressions:
      - {key: gpuadmit.io/exempt, operator: DoesNotExist}
`))
	want := map[string]any{
		"matchLabels": map[string]any{"gpu.example.com/tenant": "true"},
		"matchExpressions": []any{
			map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"gpuadmit-system", "kube-system"}},
			map[string]any{"key": "gpuadmit.io/exempt", "operator": "DoesNotExist"},
		},
	}
	n := 0
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		hooks, _, _ := unstructured.NestedSlice(find(objs, kind, "gpuadmit").Object, "webhooks")
		for _, h := range hooks {
			h := h.(map[string]any)
			if got := h["namespaceSelector"]; !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("%s %s: namespaceSelector %v, want %v", kind, h["name"], got, want)
			}
			n++
		}
	}
	if n != 6 {
		t.Errorf("%d webhooks checked, want 6 (pods, ResourceClaims and workloads in both configurations)", n)
	}
}

// TestImageReferences: a registry (the image's, else global.imageRegistry)
// is prepended to the repository; a digest replaces the tag.
func TestImageReferences(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name                string
		args                []string
		webhook, agentImage string
	}{
		{"registry and digest", []string{"--set", "image.registry=registry.example.com:5000,image.repository=gpuadmit/gpuadmit-webhook",
			"--set", "image.digest=" + digest, "--set", "image.tag=ignored",
			"--set", "agent.image.registry=registry.example.com:5000/mirror/,agent.image.digest=" + digest},
			"registry.example.com:5000/gpuadmit/gpuadmit-webhook@" + digest, "registry.example.com:5000/mirror/ghcr.io/gpuadmit/gpuadmit-nvml-agent@" + digest},
		{"global registry, an image's own wins", []string{"--set", "global.imageRegistry=mirror.example.com",
			"--set", "agent.image.registry=agents.example.com,agent.image.tag=1.2.3"},
			"mirror.example.com/ghcr.io/gpuadmit/gpuadmit-webhook:0.1.0", "agents.example.com/ghcr.io/gpuadmit/gpuadmit-nvml-agent:1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.args...)
			_, c := webhookPod(t, objs)
			if got := c["image"]; got != tc.webhook {
				t.Errorf("the webhook's image %v, want %s", got, tc.webhook)
			}
			cs, _, _ := unstructured.NestedSlice(find(objs, "DaemonSet", "gpuadmit-nvml-agent").Object, "spec", "template", "spec", "containers")
			if got := cs[0].(map[string]any)["image"]; got != tc.agentImage {
				t.Errorf("the agent's image %v, want %s", got, tc.agentImage)
			}
		})
	}
}

// TestKubeVersion: the chart refuses Kubernetes before 1.30 (the webhooks'
// matchConditions and ValidatingAdmissionPolicy GA), helm's own default
// version (v1.20.0 for the helm built here) included.
func TestKubeVersion(t *testing.T) {
	for _, version := range []string{"", "v1.29.9"} {
		args := []string{"template", "gpuadmit", chartDir}
		if version != "" {
			args = append(args, "--kube-version", version)
		}
		out, err := exec.Command(helmBin(t), args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "chart requires kubeVersion: >=1.30.0-0") {
			t.Errorf("helm template --kube-version %q: %v, want the chart's kubeVersion refusal\n%.300s", version, err, out)
		}
	}
	if out, err := exec.Command(helmBin(t), "template", "gpuadmit", chartDir, "--kube-version", minKubeVersion).CombinedOutput(); err != nil {
		t.Errorf("helm template --kube-version %s: %v\n%.300s", minKubeVersion, err, out)
	}
}

// TestHAMiDeviceConfigsPastedAsIs: the device config HAMi's charts render
// (pkg/config/testdata: the current chart's rendering and two older
// ones), pasted as it is under config.devices, passes the values schema,
// and the rendered configuration governs the same families as gpuadmit
// reading HAMi's file itself; the webhooks' matchConditions name every
// resource of those families.
func TestHAMiDeviceConfigsPastedAsIs(t *testing.T) {
	for _, file := range []string{"hami-chart-rendered.yaml", "hami-chart-v2.10.yaml", "hami-chart-v2.6.yaml"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(hamiTestdata, file)
			objs := render(t, "-f", pasteUnderDevices(t, path))
			cfg, ignored, err := config.Parse([]byte(nested(t, find(objs, "ConfigMap", "gpuadmit-config"), "data", "config.yaml")))
			if err != nil {
				t.Fatalf("the rendered configuration is not one the server accepts: %v", err)
			}
			bare, bareIgnored, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := config.Families(cfg), config.Families(bare); !slices.Equal(got, want) {
				t.Errorf("pasted under config.devices, %d families governed:\n%+v\nread by gpuadmit, %d:\n%+v", len(got), got, len(want), want)
			}
			var trimmed []string
			for _, k := range ignored {
				trimmed = append(trimmed, strings.TrimPrefix(k, "devices."))
			}
			if !slices.Equal(trimmed, bareIgnored) {
				t.Errorf("pasted, the server ignores %q; reading the file, %q", ignored, bareIgnored)
			}
			want := familyNames(cfg)
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				for _, got := range matchedNames(t, find(objs, kind, "gpuadmit")) {
					if slices.Sort(got); !slices.Equal(got, want) {
						t.Errorf("%s matchConditions name\n%v\nthe families\n%v", kind, got, want)
					}
				}
			}
		})
	}
}

// familyNames are the sorted resource names of the families cfg governs.
func familyNames(cfg *config.Configuration) []string {
	var out []string
	for _, f := range config.Families(cfg) {
		for _, n := range []string{string(f.Names.Count), string(f.Names.Memory), string(f.Names.MemoryPercentage), string(f.Names.Cores)} {
			if n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestEmptyHAMiSections: a HAMi section left empty in YAML (null), as a
// hand-edited device-config.yaml may have it, is governed as `{}` is.
func TestEmptyHAMiSections(t *testing.T) {
	families := func(args ...string) []string {
		objs := render(t, args...)
		cfg, _, err := config.Parse([]byte(nested(t, find(objs, "ConfigMap", "gpuadmit-config"), "data", "config.yaml")))
		if err != nil {
			t.Fatalf("the rendered configuration is not one the server accepts: %v", err)
		}
		var names []string
		for _, f := range config.Families(cfg) {
			names = append(names, f.Name)
		}
		return names
	}
	null := families("-f", writeValues(t, "config:\n  devices:\n    cambricon:\n    amd:\n"))
	empty := families("--set-json", "config.devices.cambricon={}", "--set-json", "config.devices.amd={}")
	if len(null) != 3 || !slices.Equal(null, empty) {
		t.Errorf("null sections govern %v, empty ones %v; want nvidia's and the two sections'", null, empty)
	}
}
