package chart_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/hack/manifestgen"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
)

// TestLint: helm lint passes with the default values and each values file
// of ci/, for the oldest Kubernetes the chart supports and for the current
// one.
func TestLint(t *testing.T) {
	for _, version := range []string{minKubeVersion, renderKubeVersion} {
		for _, values := range []string{"", "ci/cert-manager-values.yaml", "ci/renamed-resources-values.yaml", "ci/agent-disabled-values.yaml",
			"ci/client-auth-values.yaml", "ci/guards-values.yaml", "ci/hami-devices-values.yaml", "ci/names-values.yaml"} {
			args := []string{"lint", chartDir, "--strict", "--kube-version", version}
			if values != "" {
				args = append(args, "-f", chartDir+"/"+values)
			}
			out, err := exec.Command(helmBin(t), args...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "0 chart(s) failed") {
				t.Errorf("helm lint --kube-version %s %s: %v\n%s", version, values, err, out)
			}
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
				"CustomResourceDefinition/gpureservationsets.gpuadmit.io", "CustomResourceDefinition/gpuclusterquotas.gpuadmit.io",
				"CustomResourceDefinition/gpubudgets.gpuadmit.io", "CustomResourceDefinition/gpuclusterbudgets.gpuadmit.io",
				"PodDisruptionBudget/gpuadmit-webhook", "ClusterRole/gpuadmit-gpuusage-view", "ClusterRole/gpuadmit-gpubudget-view", "ConfigMap/gpuadmit-policy",
				"NetworkPolicy/gpuadmit-webhook", "ClusterRole/gpuadmit-metrics-reader"},
			never: []string{"Certificate/gpuadmit-webhook", "ServiceMonitor/gpuadmit-webhook", "Namespace/gpuadmit-system",
				"ConfigMap/gpuadmit-client-ca", "ClusterRoleBinding/gpuadmit-metrics-reader",
				"ValidatingAdmissionPolicy/gpuadmit-hami-pod-annotations", "ValidatingAdmissionPolicyBinding/gpuadmit-hami-pod-annotations",
				"ValidatingAdmissionPolicy/gpuadmit-node-device-annotations", "ValidatingAdmissionPolicyBinding/gpuadmit-node-device-annotations"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				d := find(objs, "Deployment", "gpuadmit-webhook")
				if n := num(d, "spec", "replicas"); n != 3 {
					t.Errorf("replicas %d, want 3", n)
				}
				args := webhookArgs(t, objs)
				for _, want := range []string{"--tls-min-version=1.3", "--metrics-secure=true", "--metrics-bind-address=:8080"} {
					if !slices.Contains(args, want) {
						t.Errorf("the webhook's args %v lack %s", args, want)
					}
				}
				if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--client-") }) {
					t.Errorf("client authentication is off by default, the args are %v", args)
				}
				np := find(objs, "NetworkPolicy", "gpuadmit-webhook")
				if got, want := ingress(np), []string{"9443 from any", "9443 from pod app.kubernetes.io/name=gpuadmit-webhook",
					"8080 from namespace kubernetes.io/metadata.name=monitoring", "8081 from any"}; !slices.Equal(got, want) {
					t.Errorf("the NetworkPolicy admits %q, want %q", got, want)
				}
				if types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes"); !slices.Equal(types, []string{"Ingress"}) {
					t.Errorf("the NetworkPolicy's policyTypes %v, want Ingress only", types)
				}
				role := grants(find(objs, "ClusterRole", "gpuadmit-webhook"))
				for _, want := range []string{"authentication.k8s.io tokenreviews create", "authorization.k8s.io subjectaccessreviews create",
					"admissionregistration.k8s.io validatingwebhookconfigurations list,watch",
					"admissionregistration.k8s.io validatingwebhookconfigurations/gpuadmit get,update", "events create,patch,list,watch",
					"gpuadmit.io gpuclusterquotas get,list,watch", "gpuadmit.io gpuclusterquotas/status update",
					"gpuadmit.io gpubudgets get,list,watch", "gpuadmit.io gpuclusterbudgets get,list,watch",
					"gpuadmit.io gpubudgets/status update,patch", "gpuadmit.io gpuclusterbudgets/status update,patch"} {
					if !slices.Contains(role, want) {
						t.Errorf("the webhook's ClusterRole lacks %q: %q", want, role)
					}
				}
				if got := grants(find(objs, "ClusterRole", "gpuadmit-metrics-reader")); !slices.Equal(got, []string{"/metrics get"}) {
					t.Errorf("gpuadmit-metrics-reader grants %q, want only get of /metrics", got)
				}
				// A tenant reads budgets (kubectl get gpubudget) and can never
				// write one: only read verbs are aggregated into view/edit/admin,
				// and nothing of a budget's spec is writable by the webhook.
				if got, want := grants(find(objs, "ClusterRole", "gpuadmit-gpubudget-view")),
					[]string{"gpuadmit.io gpubudgets get,list,watch", "gpuadmit.io gpubudgets/status get,list,watch"}; !slices.Equal(got, want) {
					t.Errorf("gpuadmit-gpubudget-view grants %q, want %q", got, want)
				}
				for _, g := range role {
					if strings.Contains(g, "budgets ") && !strings.HasSuffix(g, " get,list,watch") {
						t.Errorf("the webhook's ClusterRole may write a budget's spec: %q", g)
					}
				}
				for _, name := range []string{"gpuusages.gpuadmit.io", "gpureservationsets.gpuadmit.io", "gpuclusterquotas.gpuadmit.io",
					"gpubudgets.gpuadmit.io", "gpuclusterbudgets.gpuadmit.io"} {
					if crd := find(objs, "CustomResourceDefinition", name); crd == nil || crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
						t.Errorf("the CRD %s is not kept on uninstall by default: %v", name, crd.GetAnnotations())
					}
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
		{name: "cert-manager, secure metrics scraped by a ServiceMonitor", args: []string{"-f", chartDir + "/ci/cert-manager-values.yaml",
			"--set", "metrics.serviceMonitor.enabled=true"},
			want: []string{"ServiceMonitor/gpuadmit-webhook"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				ep := scrapeEndpoint(t, objs)
				if got := nested(t, ep, "tlsConfig", "ca", "secret", "name"); got != "gpuadmit-webhook-cert-manager" {
					t.Errorf("the ServiceMonitor verifies the metrics with the CA of Secret %s, want cert-manager's", got)
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
		{name: "secure metrics scraped by a ServiceMonitor", args: []string{"-f", chartDir + "/ci/agent-disabled-values.yaml"},
			want:  []string{"ServiceMonitor/gpuadmit-webhook", "ClusterRole/gpuadmit-metrics-reader"},
			never: []string{"ClusterRoleBinding/gpuadmit-metrics-reader"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				ep := scrapeEndpoint(t, objs)
				for field, want := range map[string]string{"scheme": "https", "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
					"tlsConfig.serverName": "gpuadmit-webhook.gpuadmit-system.svc", "tlsConfig.ca.secret.name": "gpuadmit-webhook-tls",
					"tlsConfig.ca.secret.key": "ca.crt"} {
					if got := nested(t, ep, strings.Split(field, ".")...); got != want {
						t.Errorf("ServiceMonitor endpoint %s %q, want %q", field, got, want)
					}
				}
			}},
		{name: "metrics over plain HTTP", args: []string{"--set", "metrics.secure=false", "--set", "metrics.serviceMonitor.enabled=true",
			"--set", "metrics.reader.subjects[0].kind=ServiceAccount,metrics.reader.subjects[0].name=p,metrics.reader.subjects[0].namespace=m"},
			want:  []string{"ServiceMonitor/gpuadmit-webhook"},
			never: []string{"ClusterRole/gpuadmit-metrics-reader", "ClusterRoleBinding/gpuadmit-metrics-reader"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				ep := scrapeEndpoint(t, objs)
				if got := nested(t, ep, "scheme"); got != "http" {
					t.Errorf("ServiceMonitor scheme %q, want http", got)
				}
				if _, ok := ep.Object["tlsConfig"]; ok {
					t.Errorf("plain HTTP scrapes have a tlsConfig: %v", ep.Object)
				}
				if args := webhookArgs(t, objs); !slices.Contains(args, "--metrics-secure=false") {
					t.Errorf("the webhook's args %v lack --metrics-secure=false", args)
				}
				if role := grants(find(objs, "ClusterRole", "gpuadmit-webhook")); slices.ContainsFunc(role, func(g string) bool {
					return strings.Contains(g, "tokenreviews") || strings.Contains(g, "subjectaccessreviews")
				}) {
					t.Errorf("without secure metrics the webhook needs no token or access reviews: %q", role)
				}
			}},
		{name: "client authentication, API server CIDRs, a metrics reader", args: []string{"-f", chartDir + "/ci/client-auth-values.yaml"},
			want: []string{"ConfigMap/gpuadmit-client-ca", "NetworkPolicy/gpuadmit-webhook", "ClusterRoleBinding/gpuadmit-metrics-reader"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if ca := nested(t, find(objs, "ConfigMap", "gpuadmit-client-ca"), "data", "ca.crt"); !strings.HasPrefix(ca, "-----BEGIN CERTIFICATE-----\n") {
					t.Errorf("the client CA ConfigMap holds %q", ca)
				}
				args := webhookArgs(t, objs)
				for _, want := range []string{"--client-ca-file=/client-ca/ca.crt", "--client-cn-name=kube-apiserver"} {
					if !slices.Contains(args, want) {
						t.Errorf("the webhook's args %v lack %s", args, want)
					}
				}
				checkClientCAMount(t, objs, "gpuadmit-client-ca")
				if got := ingress(find(objs, "NetworkPolicy", "gpuadmit-webhook"))[0]; got != "9443 from 10.0.0.10/32 or 10.0.0.11/32 or 10.0.0.12/32" {
					t.Errorf("the webhook port admits %q, want the API server's CIDRs", got)
				}
				subjects, _, _ := unstructured.NestedSlice(find(objs, "ClusterRoleBinding", "gpuadmit-metrics-reader").Object, "subjects")
				if want := []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}}; !equality.Semantic.DeepEqual(subjects, want) {
					t.Errorf("gpuadmit-metrics-reader is bound to %v, want %v", subjects, want)
				}
			}},
		{name: "client CA from an existing ConfigMap, two common names, TLS 1.2, extra ingress",
			args: []string{"--set", "webhook.clientAuth.enabled=true,webhook.clientAuth.existingConfigMap=apiserver-ca,webhook.clientAuth.configMapKey=ca.pem",
				"--set", "webhook.clientAuth.commonNames={kube-apiserver,front-proxy-client}", "--set", "webhook.tls.minVersion=1.2",
				"--set-json", `networkPolicy.extraIngress=[{"from":[{"podSelector":{"matchLabels":{"app":"konnectivity-agent"}}}],"ports":[{"port":9443}]}]`,
				"--set-json", `networkPolicy.metrics.podSelector={"matchLabels":{"app.kubernetes.io/name":"prometheus"}}`},
			never: []string{"ConfigMap/gpuadmit-client-ca"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				args := webhookArgs(t, objs)
				for _, want := range []string{"--client-ca-file=/client-ca/ca.pem", "--client-cn-name=kube-apiserver,front-proxy-client", "--tls-min-version=1.2"} {
					if !slices.Contains(args, want) {
						t.Errorf("the webhook's args %v lack %s", args, want)
					}
				}
				checkClientCAMount(t, objs, "apiserver-ca")
				rules := ingress(find(objs, "NetworkPolicy", "gpuadmit-webhook"))
				if want := "8080 from namespace kubernetes.io/metadata.name=monitoring and pod app.kubernetes.io/name=prometheus"; !slices.Contains(rules, want) {
					t.Errorf("the NetworkPolicy admits %q, want %q", rules, want)
				}
				if got := rules[len(rules)-1]; got != "9443 from pod app=konnectivity-agent" {
					t.Errorf("the last ingress rule is %q, want networkPolicy.extraIngress", got)
				}
			}},
		{name: "TLS 1.2 from a values file (a YAML number)", args: []string{"-f", writeValues(t, "webhook:\n  tls:\n    minVersion: 1.2\n")},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if args := webhookArgs(t, objs); !slices.Contains(args, "--tls-min-version=1.2") {
					t.Errorf("the webhook's args %v lack --tls-min-version=1.2", args)
				}
			}},
		{name: "annotation guards", args: []string{"-f", chartDir + "/ci/guards-values.yaml"},
			want: []string{"ValidatingAdmissionPolicy/gpuadmit-hami-pod-annotations", "ValidatingAdmissionPolicyBinding/gpuadmit-hami-pod-annotations",
				"ValidatingAdmissionPolicy/gpuadmit-node-device-annotations", "ValidatingAdmissionPolicyBinding/gpuadmit-node-device-annotations"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				pods := find(objs, "ValidatingAdmissionPolicy", "gpuadmit-hami-pod-annotations")
				checkGuard(t, objs, pods, "CREATE,UPDATE pods,pods/status")
				exempt := `!(request.userInfo.username in ["system:serviceaccount:hami-system:hami-scheduler","system:serviceaccount:hami-system:hami-device-plugin"] || ` +
					`(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ["system:masters"])))`
				if got := policyExpr(t, pods, "matchConditions", "not-an-allowed-writer", "expression"); got != exempt {
					t.Errorf("the pod guard exempts %q, want %q", got, exempt)
				}
				for _, v := range []string{"changed", "assignment"} {
					if got := policyExpr(t, pods, "variables", v, "expression"); !strings.Contains(got, "'hami.io/") {
						t.Errorf("the pod guard's %s is %q", v, got)
					}
				}
				if msgs := policyMessages(pods); !strings.Contains(msgs, `"only system:serviceaccount:hami-system:hami-scheduler, system:serviceaccount:hami-system:hami-device-plugin and members of system:masters may write hami.io/ annotations`) {
					t.Errorf("the pod guard's messages do not name who may write: %s", msgs)
				}

				nodes := find(objs, "ValidatingAdmissionPolicy", "gpuadmit-node-device-annotations")
				checkGuard(t, objs, nodes, "CREATE,UPDATE nodes,nodes/status")
				exempt = `!(request.userInfo.username in ["system:serviceaccount:infra:node-provisioner"] || ` +
					`(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ["system:masters"])))`
				if got := policyExpr(t, nodes, "matchConditions", "not-an-administrator", "expression"); got != exempt {
					t.Errorf("the node guard exempts %q, want %q", got, exempt)
				}
				for v, want := range map[string]string{
					"isAgentOfThisNode": `request.userInfo.username == "system:serviceaccount:gpuadmit-system:gpuadmit-nvml-agent" && variables.claimedNode == object.metadata.name`,
					"isHAMi":            `request.userInfo.username in ["system:serviceaccount:hami-system:hami-device-plugin","system:serviceaccount:hami-system:hami-scheduler"]`,
				} {
					if got := policyExpr(t, nodes, "variables", v, "expression"); got != want {
						t.Errorf("the node guard's %s is %q, want %q", v, got, want)
					}
				}
				msgs := policyMessages(nodes)
				for _, want := range []string{"gpuadmit-nvml-agent with a pod-bound token of that Node) and system:serviceaccount:infra:node-provisioner and members of system:masters may",
					"only system:serviceaccount:hami-system:hami-device-plugin, system:serviceaccount:hami-system:hami-scheduler, system:serviceaccount:infra:node-provisioner and members of system:masters may write hami.io/node-*"} {
					if !strings.Contains(msgs, want) {
						t.Errorf("the node guard's messages lack %q: %s", want, msgs)
					}
				}
			}},
		{name: "node guard without the agent and without HAMi", args: []string{"--set", "guards.nodeDeviceAnnotations.enabled=true", "--set", "agent.enabled=false",
			"--set-json", "guards.nodeDeviceAnnotations.hamiDevicePluginUsers=[]"},
			want:  []string{"ValidatingAdmissionPolicy/gpuadmit-node-device-annotations"},
			never: []string{"ValidatingAdmissionPolicy/gpuadmit-hami-pod-annotations", "ValidatingAdmissionPolicy/gpuadmit-nvml-agent-own-node"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				nodes := find(objs, "ValidatingAdmissionPolicy", "gpuadmit-node-device-annotations")
				for _, v := range []string{"isAgentOfThisNode", "isHAMi"} {
					if got := policyExpr(t, nodes, "variables", v, "expression"); got != "false" {
						t.Errorf("without the agent and HAMi's users the node guard's %s is %q, want false", v, got)
					}
				}
				if msgs := policyMessages(nodes); !strings.Contains(msgs, "only members of system:masters may (gpuadmit's guards.nodeDeviceAnnotations; the NVML agent is disabled)") {
					t.Errorf("the node guard's messages: %s", msgs)
				}
			}},
		{name: "pod guard with the default HAMi identities", args: []string{"--set", "guards.hamiPodAnnotations.enabled=true"},
			want:  []string{"ValidatingAdmissionPolicy/gpuadmit-hami-pod-annotations"},
			never: []string{"ValidatingAdmissionPolicy/gpuadmit-node-device-annotations"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				got := policyExpr(t, find(objs, "ValidatingAdmissionPolicy", "gpuadmit-hami-pod-annotations"), "matchConditions", "not-an-allowed-writer", "expression")
				if !strings.Contains(got, `["system:serviceaccount:kube-system:hami-scheduler","system:serviceaccount:kube-system:hami-device-plugin"]`) {
					t.Errorf("the pod guard exempts %q, want HAMi's chart's ServiceAccounts in kube-system", got)
				}
			}},
		{name: "no NetworkPolicy", args: []string{"--set", "networkPolicy.enabled=false"},
			never: []string{"NetworkPolicy/gpuadmit-webhook"}},
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
		{"config.devices.amd.resourceCountName=bad name", "/config/devices/amd/resourceCountName"},
		{"config.devices.vnpus.configs[0].memoryCapacity=big", "/config/devices/vnpus"},
		{"config.devices.gpushare.memoryUnit=KiB", "/config/devices/gpushare/memoryUnit"},
		{"config.devices.gpushare.unit=MiB", "'unit' not allowed"},
		{"config.devices.nvlink.resourceCountName=x", "'nvlink' not allowed"},
		{"config.admission.reviewTimeout=soon", "/config/admission/reviewTimeout"},
		{"config.policy.configMapSelector=team in (a)", "config.policy.configMapSelector"},
		{"webhook.tls.minVersion=1.1", "/webhook/tls/minVersion"},
		{"webhook.clientAuth.commonNames={a\\,b}", "/webhook/clientAuth/commonNames/0"},
		{"networkPolicy.apiServer.cidrs={10.0.0.1}", "/networkPolicy/apiServer/cidrs/0"},
		{"networkPolicy.metrics.namespaceSelector.matchNames=x", "'matchNames' not allowed"},
		{"metrics.reader.subjects[0].kind=Robot", "/metrics/reader/subjects/0"},
		{"guards.hamiPodAnnotations.enabled=yes", "/guards/hamiPodAnnotations/enabled"},
		{"guards.podAnnotations.enabled=true", "'podAnnotations' not allowed"},
		{"guards.nodeDeviceAnnotations.allowedUsers[0]=two words", "/guards/nodeDeviceAnnotations/allowedUsers/0"},
		{"guards.nodeDeviceAnnotations.hamiDevicePluginUsers=hami", "/guards/nodeDeviceAnnotations/hamiDevicePluginUsers"},
		{"podDisruptionBudget.minAvailable=2,podDisruptionBudget.maxUnavailable=1", "/podDisruptionBudget/maxUnavailable"},
		{"podDisruptionBudget.maxUnavailable=0", "/podDisruptionBudget/maxUnavailable"},
		{"podDisruptionBudget.minAvailable=150%", "/podDisruptionBudget/minAvailable"},
		{"ports.metrics=70000", "/ports/metrics"},
		{"ports.grpc=9000", "'grpc' not allowed"},
		{"image.digest=latest", "/image/digest"},
		{"agent.image.registry=a b", "/agent/image/registry"},
		{"extraArgs[0]=1", "/extraArgs/0"},
		{"extraEnv[0].value=x", "/extraEnv/0"},
		{"podLabels.team=1", "/podLabels/team"},
		{"agent.podAnnotations.owner=true", "/agent/podAnnotations/owner"},
		{"hostNetwork=yes", "/hostNetwork"},
		{"webhook.namespaceSelector.matchExpressions[0].key=a,webhook.namespaceSelector.matchExpressions[0].operator=Absent",
			"/webhook/namespaceSelector/matchExpressions/0/operator"},
		{"webhook.namespaceSelector.matchNames=x", "'matchNames' not allowed"},
		{"hami.deviceConfigMap=HAMi_Config", "/hami/deviceConfigMap"},
	} {
		_, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, "--set", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v, want an error naming %s", tc.set, err, tc.want)
		}
	}
}

// TestRenderRefuses: values the schema cannot judge alone fail rendering
// with a message saying what to set.
func TestRenderRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"client authentication without a CA", []string{"--set", "webhook.clientAuth.enabled=true"},
			"webhook.clientAuth.enabled needs the CA of the API server's client certificate: set webhook.clientAuth.caBundle (PEM) or webhook.clientAuth.existingConfigMap"},
		{"a CA inline and a ConfigMap", []string{"--set", "webhook.clientAuth.enabled=true,webhook.clientAuth.existingConfigMap=ca",
			"--set-file", "webhook.clientAuth.caBundle=" + writeValues(t, "-----BEGIN CERTIFICATE-----\n")}, "set caBundle or existingConfigMap, not both"},
		{"a CA that is not PEM", []string{"--set", "webhook.clientAuth.enabled=true,webhook.clientAuth.caBundle=abc"}, "caBundle holds no PEM certificate"},
		{"a pod guard nobody may pass", []string{"--set", "guards.hamiPodAnnotations.enabled=true",
			"--set-json", "guards.hamiPodAnnotations.allowedUsers=[]", "--set-json", "guards.hamiPodAnnotations.allowedGroups=[]"},
			"guards.hamiPodAnnotations.enabled with neither allowedUsers nor allowedGroups"},
		{"a metrics reader ServiceAccount without a namespace", []string{"--set", "metrics.reader.subjects[0].kind=ServiceAccount,metrics.reader.subjects[0].name=p"},
			"a ServiceAccount needs its namespace"},
		{"a budget keeping every replica up", []string{"--set", "replicas=2", "--set", "podDisruptionBudget.minAvailable=2"},
			"podDisruptionBudget.minAvailable (2) keeps every one of the replicas (2) up: that PodDisruptionBudget would block every node drain. " +
				"Set it below replicas, or set podDisruptionBudget.maxUnavailable instead"},
		{"a budget keeping every replica up, in percent", []string{"--set", "podDisruptionBudget.minAvailable=67%"},
			"podDisruptionBudget.minAvailable (67%) keeps every one of the replicas (3) up"},
		{"a budget above the replicas", []string{"--set", "replicas=2", "--set", "podDisruptionBudget.minAvailable=5"},
			"podDisruptionBudget.minAvailable (5) keeps every one of the replicas (2) up"},
		{"pod labels changing the selector's", []string{"--set", "podLabels.app\\.kubernetes\\.io/name=other"},
			`podLabels: "app.kubernetes.io/name" is one of the chart's own pod labels (app.kubernetes.io/name: gpuadmit-webhook), which podLabels cannot change`},
		{"two ports the same", []string{"--set", "ports.metrics=9443"}, "ports: webhook (9443), metrics (9443) and probes (8081) must be three different ports"},
		{"agent pod labels changing the chart's", []string{"--set", "agent.podLabels.app\\.kubernetes\\.io/part-of=other"},
			`agent.podLabels: "app.kubernetes.io/part-of" is one of the chart's own pod labels`},
		{"a review as long as the webhook's timeout", []string{"--set", "config.admission.reviewTimeout=10s"},
			"config.admission.reviewTimeout (10s) must be below webhook.timeoutSeconds (10): the API server would stop waiting before gpuadmit's answer. " +
				"Lower config.admission.reviewTimeout below 10s or raise webhook.timeoutSeconds (at most 30) above it"},
		{"a review longer than a lowered timeout", []string{"--set", "webhook.timeoutSeconds=5"}, "config.admission.reviewTimeout (8s) must be below webhook.timeoutSeconds (5)"},
		{"a review of minutes", []string{"--set", "config.admission.reviewTimeout=1m0.5s,webhook.timeoutSeconds=30"},
			"config.admission.reviewTimeout (1m0.5s) must be below webhook.timeoutSeconds (30)"},
	} {
		_, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestReviewTimeoutBelowTimeoutRenders: a reviewTimeout just below the
// webhooks' timeoutSeconds, in any unit, renders (the refusals above are not
// a parser that refuses everything).
func TestReviewTimeoutBelowTimeoutRenders(t *testing.T) {
	for _, set := range []string{"config.admission.reviewTimeout=9500ms", "config.admission.reviewTimeout=29s,webhook.timeoutSeconds=30",
		"config.admission.reviewTimeout=1m,webhook.timeoutSeconds=30,config.admission.reviewTimeout=0.4m", "webhook.timeoutSeconds=9"} {
		if _, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, "--set", set); err != nil {
			t.Errorf("--set %s: %v", set, err)
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
	n := config.Settings(cfg).Names
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
		results, err := m.Match(context.Background(), tc.pod.Build())
		var called []string
		for _, r := range results {
			if r.Called {
				called = append(called, r.Webhook)
			}
		}
		if err != nil || len(called) != tc.want {
			t.Errorf("%s: reaches %v (%v), want %d webhooks", tc.name, called, err, tc.want)
		}
	}
}

// scrapeEndpoint returns the ServiceMonitor's one endpoint.
func scrapeEndpoint(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	eps, _, _ := unstructured.NestedSlice(find(objs, "ServiceMonitor", "gpuadmit-webhook").Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("the ServiceMonitor has %d endpoints, want 1", len(eps))
	}
	ep := &unstructured.Unstructured{Object: eps[0].(map[string]any)}
	if got := nested(t, ep, "port"); got != "metrics" {
		t.Errorf("the ServiceMonitor scrapes port %q, want metrics", got)
	}
	return ep
}

// checkClientCAMount: the webhook mounts the whole ConfigMap configMap
// (no subPath, so that a changed CA reaches the file) read-only at
// /client-ca.
func checkClientCAMount(t *testing.T, objs []*unstructured.Unstructured, configMap string) {
	t.Helper()
	pod, c := webhookPod(t, objs)
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	if want := map[string]any{"name": "client-ca", "mountPath": "/client-ca", "readOnly": true}; !slices.ContainsFunc(mounts, func(m any) bool {
		return equality.Semantic.DeepEqual(m, want)
	}) {
		t.Errorf("the webhook's mounts %v lack %v", mounts, want)
	}
	volumes, _, _ := unstructured.NestedSlice(pod, "volumes")
	if want := map[string]any{"name": "client-ca", "configMap": map[string]any{"name": configMap}}; !slices.ContainsFunc(volumes, func(v any) bool {
		return equality.Semantic.DeepEqual(v, want)
	}) {
		t.Errorf("the webhook's volumes %v lack %v", volumes, want)
	}
}

// writeValues writes text to a file for -f or --set-file and returns its path.
func writeValues(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkGuard: a guard policy refuses (failurePolicy Fail, its binding
// denies) on what ("OPERATIONS resources") of core v1, a version named so
// that the API server type-checks its expressions.
func checkGuard(t *testing.T, objs []*unstructured.Unstructured, policy *unstructured.Unstructured, what string) {
	t.Helper()
	if got := nested(t, policy, "spec", "failurePolicy"); got != "Fail" {
		t.Errorf("%s: failurePolicy %s, want Fail", policy.GetName(), got)
	}
	rules, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConstraints", "resourceRules")
	var got []string
	for _, r := range rules {
		str := func(f string) string {
			s, _, _ := unstructured.NestedStringSlice(r.(map[string]any), f)
			return strings.Join(s, ",")
		}
		got = append(got, str("apiGroups")+"|"+str("apiVersions")+"|"+str("operations")+" "+str("resources"))
	}
	if want := []string{"|v1|" + what}; !slices.Equal(got, want) {
		t.Errorf("%s matches %q, want %q", policy.GetName(), got, want)
	}
	b := find(objs, "ValidatingAdmissionPolicyBinding", policy.GetName())
	if b == nil {
		t.Fatalf("%s has no binding", policy.GetName())
	}
	actions, _, _ := unstructured.NestedStringSlice(b.Object, "spec", "validationActions")
	if nested(t, b, "spec", "policyName") != policy.GetName() || !slices.Equal(actions, []string{"Deny"}) {
		t.Errorf("binding %s: policy %s, actions %v", b.GetName(), nested(t, b, "spec", "policyName"), actions)
	}
}

// policyExpr returns the field of a policy's entry named name in the list
// spec.<list> (matchConditions, variables), failing t when it is missing.
func policyExpr(t *testing.T, policy *unstructured.Unstructured, list, name, field string) string {
	t.Helper()
	items, _, _ := unstructured.NestedSlice(policy.Object, "spec", list)
	for _, it := range items {
		if m := it.(map[string]any); m["name"] == name {
			if s, ok := m[field].(string); ok {
				return s
			}
		}
	}
	t.Fatalf("%s has no %s %s with a %s", policy.GetName(), list, name, field)
	return ""
}

// policyMessages joins a policy's messageExpressions.
func policyMessages(policy *unstructured.Unstructured) string {
	vs, _, _ := unstructured.NestedSlice(policy.Object, "spec", "validations")
	var out []string
	for _, v := range vs {
		if m, ok := v.(map[string]any)["messageExpression"].(string); ok {
			out = append(out, m)
		}
	}
	return strings.Join(out, "\n")
}
