package chart_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

// cluster is a bare control plane (no CRD, no webhook) that helm installs into.
type cluster struct {
	cfg        *rest.Config // the admin's (system:masters)
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	disco      discovery.DiscoveryInterface
	kubeconfig string
	helmHome   string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	env := &envtest.Environment{BinaryAssetsDirectory: envtestgate.Assets(t)}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	cfg.WarningHandler = rest.NoWarnings{} // deprecated kinds, listed by leftovers
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	c := &cluster{cfg: cfg, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), helmHome: t.TempDir()}
	if err := local.WriteAdminKubeconfig(env, c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	c.disco = c.kube.Discovery()
	return c
}

// helm runs helm against the cluster, with its caches in a temp dir.
func (c *cluster) helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.helmErr(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmErr runs helm as helm does, returning its error.
func (c *cluster) helmErr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), append(args, "--kubeconfig", c.kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+c.helmHome+"/config", "HELM_CACHE_HOME="+c.helmHome+"/cache",
		"HELM_DATA_HOME="+c.helmHome+"/data")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// leftovers lists every object labelled part-of=gpuadmit, of every
// resource the API server lists.
// keptCRDs are what helm uninstall leaves with crds.keep (leftovers' order).
var keptCRDs = []string{"CustomResourceDefinition/gpubudgets.gpuadmit.io", "CustomResourceDefinition/gpuclusterbudgets.gpuadmit.io", "CustomResourceDefinition/gpuclusterquotas.gpuadmit.io", "CustomResourceDefinition/gpureservationsets.gpuadmit.io", "CustomResourceDefinition/gpuusages.gpuadmit.io"}

func (c *cluster) leftovers(t *testing.T) []string {
	t.Helper()
	lists, err := c.disco.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			items, err := c.dyn.Resource(gv.WithResource(r.Name)).List(context.Background(),
				metav1.ListOptions{LabelSelector: "app.kubernetes.io/part-of=gpuadmit"})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
					continue
				}
				t.Fatalf("listing %s: %v", r.Name, err)
			}
			for _, it := range items.Items {
				out = append(out, fmt.Sprintf("%s/%s", r.Kind, strings.TrimPrefix(it.GetNamespace()+"/"+it.GetName(), "/")))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestInstallUpgradeUninstall: helm installs the chart into a real API
// server (every object accepted), upgrades it with changed values (the
// replicas' certificate Secret keeps what they wrote into it), and
// uninstalls it leaving nothing behind but what the chart says it keeps:
// the CRD when crds.keep is set, nothing when it is not.
func TestInstallUpgradeUninstall(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	const ns = "gpuadmit-system"

	// Without crds.keep, nothing at all stays.
	c.helm(t, "install", "gpuadmit", chartDir, "-n", ns, "--create-namespace", "--set", "crds.keep=false")
	c.helm(t, "uninstall", "gpuadmit", "-n", ns, "--wait")
	if left := c.leftovers(t); len(left) != 0 {
		t.Fatalf("helm uninstall with crds.keep=false left %v", left)
	}

	out := c.helm(t, "install", "gpuadmit", chartDir, "-n", ns)
	if !strings.Contains(out, "kubectl get gpuusage -A") {
		t.Errorf("NOTES.txt does not say how to check the installation:\n%s", out)
	}
	// No CIDRs, no konnectivity agents here, client authentication off: the
	// notes say loudly that any pod can post reviews, and name the API
	// server's advertised addresses.
	if !strings.Contains(out, "WARNING: the webhook port is open to every pod") || !strings.Contains(out, "the API server advertises ") {
		t.Errorf("NOTES.txt does not warn that the webhook port is open to every pod:\n%s", out)
	}
	installed := c.leftovers(t)
	for _, want := range []string{"Deployment/gpuadmit-system/gpuadmit-webhook", "DaemonSet/gpuadmit-system/gpuadmit-nvml-agent",
		"CustomResourceDefinition/gpuusages.gpuadmit.io", "CustomResourceDefinition/gpureservationsets.gpuadmit.io", "CustomResourceDefinition/gpuclusterquotas.gpuadmit.io", "MutatingWebhookConfiguration/gpuadmit", "ValidatingWebhookConfiguration/gpuadmit",
		"CustomResourceDefinition/gpubudgets.gpuadmit.io", "CustomResourceDefinition/gpuclusterbudgets.gpuadmit.io",
		"ValidatingAdmissionPolicy/gpuadmit-nvml-agent-own-node", "Secret/gpuadmit-system/gpuadmit-webhook-tls",
		"ClusterRole/gpuadmit-gpuusage-view", "ClusterRole/gpuadmit-gpubudget-view", "PodDisruptionBudget/gpuadmit-system/gpuadmit-webhook",
		"NetworkPolicy/gpuadmit-system/gpuadmit-webhook", "ClusterRole/gpuadmit-metrics-reader"} {
		if !slices.Contains(installed, want) {
			t.Errorf("%s was not installed; installed: %v", want, installed)
		}
	}
	if _, err := c.dyn.Resource(schema.GroupVersionResource{Group: "gpuadmit.io", Version: "v1alpha1", Resource: "gpuusages"}).
		List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the GPUUsage resource is not served after install: %v", err)
	}

	// A replica fills the certificate Secret; an upgrade must keep it.
	secret, err := c.kube.CoreV1().Secrets(ns).Get(ctx, "gpuadmit-webhook-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{"tls.crt": []byte("written by a replica")}
	if _, err := c.kube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The upgrade also turns on client authentication and a metrics reader
	// (without the ServiceMonitor: this API server has no such kind).
	out = c.helm(t, "upgrade", "gpuadmit", chartDir, "-n", ns, "--set", "replicas=2", "--set", "config.admission.nearLimitPercent=80",
		"--set", "agent.enabled=false", "-f", chartDir+"/ci/client-auth-values.yaml", "--set", "metrics.serviceMonitor.enabled=false")
	if strings.Contains(out, "WARNING") || !strings.Contains(out, "Client authentication is on") {
		t.Errorf("NOTES.txt after turning on client authentication:\n%s", out)
	}
	d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, "gpuadmit-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("after the upgrade: %d replicas, want 2", *d.Spec.Replicas)
	}
	cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, "gpuadmit-config", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["config.yaml"], "nearLimitPercent: 80") {
		t.Errorf("after the upgrade the configuration is %q (%v)", cm.Data["config.yaml"], err)
	}
	if cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, "gpuadmit-client-ca", metav1.GetOptions{}); err != nil ||
		!strings.HasPrefix(cm.Data["ca.crt"], "-----BEGIN CERTIFICATE-----") {
		t.Errorf("after the upgrade the client CA ConfigMap is %v (%v)", cm.Data, err)
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Get(ctx, "gpuadmit-metrics-reader", metav1.GetOptions{}); err != nil {
		t.Errorf("after the upgrade: %v", err)
	}
	if _, err := c.kube.AppsV1().DaemonSets(ns).Get(ctx, "gpuadmit-nvml-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the agent is still there after the upgrade disabled it: %v", err)
	}
	if s, err := c.kube.CoreV1().Secrets(ns).Get(ctx, "gpuadmit-webhook-tls", metav1.GetOptions{}); err != nil ||
		string(s.Data["tls.crt"]) != "written by a replica" {
		t.Errorf("the upgrade lost the certificate the replicas wrote: %v %v", s.Data, err)
	}

	c.helm(t, "uninstall", "gpuadmit", "-n", ns, "--wait")
	if left := c.leftovers(t); !slices.Equal(left, keptCRDs) {
		t.Errorf("helm uninstall left %v, want only the CRDs (crds.keep)", left)
	}
}

// TestInstallEveryClusterValues: a real API server accepts what the values
// for other clusters render: HAMi's chart-rendered device config pasted
// under config.devices as it is (the webhooks' matchConditions, CEL the API
// server compiles, naming every family's resources), two replicas and their
// budget, the pods' extra metadata, arguments and environment, the host
// network and other ports, OpenShift's security contexts, a namespace label
// selector, a registry and a digest (hami.deviceConfigMap:
// TestInstallHAMiConfigMap).
func TestInstallEveryClusterValues(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	const ns = "gpuadmit-system"
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	values := writeValues(t, `
replicas: 2
podAnnotations: {example.com/owner: team-ml}
podLabels: {team: ml}
extraArgs: [--cert-check-interval=5m]
extraEnv: [{name: HTTPS_PROXY, value: "http://proxy:3128"}]
hostNetwork: true
ports: {webhook: 9543, metrics: 9580, probes: 9581}
podSecurityContext: {runAsUser: null, runAsGroup: null}
image: {registry: registry.example.com, repository: gpuadmit/gpuadmit-webhook, digest: "`+digest+`"}
webhook:
  namespaceSelector:
    matchExpressions: [{key: gpuadmit.io/exempt, operator: DoesNotExist}]
agent:
  podLabels: {tier: node}
  podSecurityContext: {runAsUser: null, runAsGroup: null}
crds: {keep: false}
`)
	c.helm(t, "install", "gpuadmit", chartDir, "-n", ns, "--create-namespace", "-f", pasteUnderDevices(t, hamiRendered), "-f", values,
		"--set", "config.devices.ascend.enabled=true")
	pdb, err := c.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "gpuadmit-webhook", metav1.GetOptions{})
	if err != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("the budget of two replicas: %+v (%v), want maxUnavailable 1", pdb.Spec, err)
	}
	d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, "gpuadmit-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps := d.Spec.Template.Spec
	if !ps.HostNetwork || ps.SecurityContext.RunAsUser != nil || ps.SecurityContext.RunAsGroup != nil ||
		ps.Containers[0].Image != "registry.example.com/gpuadmit/gpuadmit-webhook@"+digest || d.Spec.Template.Labels["team"] != "ml" {
		t.Errorf("the webhook Deployment as installed: hostNetwork %v, securityContext %+v, image %s, labels %v",
			ps.HostNetwork, ps.SecurityContext, ps.Containers[0].Image, d.Spec.Template.Labels)
	}
	vwc, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if exprs := vwc.Webhooks[0].NamespaceSelector.MatchExpressions; len(exprs) != 2 || exprs[1].Key != "gpuadmit.io/exempt" {
		t.Errorf("the validating webhook's namespaceSelector as installed: %+v", vwc.Webhooks[0].NamespaceSelector)
	}
	if expr := vwc.Webhooks[0].MatchConditions[0].Expression; !strings.Contains(expr, "'huawei.com/Ascend910B3-memory'") {
		t.Errorf("the matchConditions as installed do not name the pasted sections' resources: %s", expr)
	}
	c.helm(t, "uninstall", "gpuadmit", "-n", ns, "--wait")
}
