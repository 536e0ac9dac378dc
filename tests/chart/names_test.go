package chart_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuadmit/gpuadmit/hack/manifestgen"
)

// everyOption turns on every template that renders objects of its own.
var everyOption = []string{"--set", "guards.hamiPodAnnotations.enabled=true", "--set", "guards.nodeDeviceAnnotations.enabled=true",
	"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.dashboard.enabled=true",
	"--set-json", `metrics.reader.subjects=[{"kind":"User","name":"x"}]`, "--set", "hami.deviceConfigMap=kube-system/hami-scheduler-device",
	"--set", "config.audit.openReports=true"}

// TestTwoReleasesCollideNowhere: two releases with different
// fullnameOverride, each in its own namespace (the second without the
// CRDs, which are shared), render no object of the same kind, namespace
// and name: cluster-scoped ones (webhook configurations, ClusterRoles,
// admission policies, ...) included, and HAMi's Role in kube-system. In
// the same namespace only the ConfigMaps the command line and the
// replicas find by name (gpuadmit-config, gpuadmit-policy-accepted) keep
// it: helm refuses a second release there.
func TestTwoReleasesCollideNowhere(t *testing.T) {
	for _, mode := range []string{"self-managed", "cert-manager"} {
		first := render(t, append([]string{"--set", "certificates.mode=" + mode}, everyOption...)...)
		second := render(t, append([]string{"--set", "certificates.mode=" + mode, "--set", "fullnameOverride=gpuadmit-staging",
			"--set", "crds.install=false", "--namespace", "gpuadmit-staging"}, everyOption...)...)
		seen := map[string]bool{}
		for _, o := range first {
			seen[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
		}
		for _, o := range second {
			if key := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName(); seen[key] {
				t.Errorf("%s: both releases render %s", mode, key)
			}
		}
		sameNS := render(t, append([]string{"--set", "certificates.mode=" + mode, "--set", "fullnameOverride=gpuadmit-staging",
			"--set", "crds.install=false"}, everyOption...)...)
		var shared []string
		for _, o := range sameNS {
			if seen[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] {
				shared = append(shared, o.GetKind()+"/"+o.GetName())
			}
		}
		if want := []string{"ConfigMap/gpuadmit-config", "ConfigMap/gpuadmit-policy-accepted"}; !slices.Equal(shared, want) {
			t.Errorf("%s: in one namespace the releases share %v, want only %v", mode, shared, want)
		}
		checkNames(t, second, mode, "gpuadmit-staging", "gpuadmit-staging")
	}
}

// checkNames: every reference between a release's objects follows its
// names: the replicas' flags (Service, CA Secret, webhook configurations),
// the webhook configurations' Service, the certificate's DNS names, the
// selectors, RBAC's subjects and resourceNames, the agent's policy.
func checkNames(t *testing.T, objs []*unstructured.Unstructured, mode, full, ns string) {
	t.Helper()
	hook := full + "-webhook"
	_, c := webhookPodNamed(t, objs, hook)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{"--service-name=" + hook, "--cert-secret=" + hook + "-tls",
		"--mutating-webhook-configuration=" + full, "--validating-webhook-configuration=" + full} {
		if !slices.Contains(args, want) {
			t.Errorf("%s: the webhook's args %v lack %s", mode, args, want)
		}
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		h := find(objs, kind, full)
		if h == nil {
			t.Fatalf("%s: no %s %s: %s", mode, kind, full, kinds(objs))
		}
		for _, w := range h.Object["webhooks"].([]any) {
			svc := w.(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)
			if svc["name"] != hook || svc["namespace"] != ns {
				t.Errorf("%s: %s calls Service %v/%v, want %s/%s", mode, kind, svc["namespace"], svc["name"], ns, hook)
			}
		}
		if mode == "cert-manager" && h.GetAnnotations()["cert-manager.io/inject-ca-from"] != ns+"/"+hook {
			t.Errorf("%s: %s injects the CA of %q", mode, kind, h.GetAnnotations()["cert-manager.io/inject-ca-from"])
		}
	}
	if mode == "cert-manager" {
		cert := find(objs, "Certificate", hook)
		dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		if !slices.Equal(dns, []string{hook + "." + ns + ".svc", hook + "." + ns + ".svc.cluster.local"}) {
			t.Errorf("the certificate's DNS names %v are not the Service %s/%s's", dns, ns, hook)
		}
	} else if find(objs, "Secret", hook+"-tls") == nil {
		t.Errorf("no Secret %s-tls for the replicas' CA", hook)
	}
	if find(objs, "Service", hook) == nil || find(objs, "ServiceAccount", hook) == nil || find(objs, "Deployment", hook) == nil {
		t.Errorf("the webhook's Service, ServiceAccount or Deployment is not named %s: %s", hook, kinds(objs))
	}
	cr := find(objs, "ClusterRole", hook)
	if !strings.Contains(yamlOf(t, cr), "- "+full+"\n") || !strings.Contains(yamlOf(t, find(objs, "Role", hook)), "- "+hook+"-tls\n") {
		t.Errorf("the webhook's RBAC does not name its own webhook configurations and Secret:\n%s", yamlOf(t, cr))
	}
	policy := find(objs, "ValidatingAdmissionPolicy", full+"-nvml-agent-own-node")
	if policy == nil || !strings.Contains(policyExpr(t, policy, "matchConditions", "is-gpuadmit-nvml-agent", "expression"), "endsWith(':"+full+"-nvml-agent')") {
		t.Errorf("the agent's admission policy does not match its ServiceAccount %s-nvml-agent", full)
	}
}

// webhookPodNamed is webhookPod for the Deployment name.
func webhookPodNamed(t *testing.T, objs []*unstructured.Unstructured, name string) (pod, container map[string]any) {
	t.Helper()
	d := find(objs, "Deployment", name)
	if d == nil {
		t.Fatalf("no Deployment %s: %s", name, kinds(objs))
	}
	pod, _, _ = unstructured.NestedMap(d.Object, "spec", "template", "spec")
	containers, _, _ := unstructured.NestedSlice(pod, "containers")
	return pod, containers[0].(map[string]any)
}

// TestNamesRefused: a name override that is not a DNS label, or so long
// that a suffixed object name would pass 63 characters, is refused by the
// schema rather than truncated into a collision.
func TestNamesRefused(t *testing.T) {
	for _, set := range []string{"fullnameOverride=Gpuadmit", "fullnameOverride=" + strings.Repeat("a", 39), "nameOverride=gpu_admit",
		"fullnameOverrid=x", "hami.deviceConfigMap=kube-system/", "hami.deviceConfigMap=a/b/c", "resourceQuota=yes", "dra.enabled=maybe"} {
		if err := renderErr(t, "--set", set); err == "" {
			t.Errorf("--set %s rendered", set)
		}
	}
}

// renderErr is helm template's error with args ("" when it renders).
func renderErr(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := manifestgen.Render(context.Background(), templateHelm(t), chartDir, args...); err != nil {
		return err.Error()
	}
	return ""
}
