package chart_test

import (
	"context"
	"os"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInstallHAMiConfigMap: hami.deviceConfigMap names HAMi's ConfigMap
// where HAMi's chart puts it, kube-system/hami-scheduler-device. While it
// is missing, or lacks its key, helm install fails saying so (the replicas
// would never start, and with failurePolicy Fail every GPU pod would be
// refused). Once HAMi's ConfigMap is there: the install goes ahead, the
// configuration reads it there, the matchConditions name its families'
// resources, the webhook's ServiceAccount may read that ConfigMap and no
// other of kube-system, and the replicas roll when it changes.
func TestInstallHAMiConfigMap(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	const ns = "gpuadmit-system"
	install := []string{"install", "gpuadmit", chartDir, "-n", ns, "--create-namespace",
		"--set", "hami.deviceConfigMap=kube-system/hami-scheduler-device", "--set", "crds.keep=false",
		"--set", "config.devices.ascend.enabled=true", "--set", "config.devices.iluvatar.enabled=true"}

	out, err := c.helmErr(t, install...)
	if err == nil || !strings.Contains(out, "hami.deviceConfigMap: ConfigMap kube-system/hami-scheduler-device does not exist") ||
		!strings.Contains(out, "Install HAMi first") {
		t.Fatalf("helm install without HAMi's ConfigMap: %v, want a refusal naming it\n%s", err, out)
	}
	hami, err := os.ReadFile(hamiRendered)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hami-scheduler-device", Namespace: "kube-system"},
		Data: map[string]string{"config.yaml": string(hami)}}
	if cm, err = c.kube.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = c.helmErr(t, install...)
	if err == nil || !strings.Contains(out, "ConfigMap kube-system/hami-scheduler-device has no key device-config.yaml") {
		t.Fatalf("helm install with HAMi's ConfigMap lacking its key: %v, want a refusal naming the key\n%s", err, out)
	}
	cm.Data = map[string]string{"device-config.yaml": string(hami)}
	if cm, err = c.kube.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = c.helm(t, install...)
	if !strings.Contains(out, "HAMi's device config is read from ConfigMap kube-system/hami-scheduler-device") ||
		!strings.Contains(out, "GPU pods are refused while no replica is ready") {
		t.Errorf("NOTES.txt does not say where HAMi's device config is read, and what a replica without it means:\n%s", out)
	}
	cfg, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, "gpuadmit-config", metav1.GetOptions{})
	if err != nil || !strings.Contains(cfg.Data["config.yaml"], "hamiConfigMap: kube-system/hami-scheduler-device") {
		t.Errorf("the configuration does not read HAMi's ConfigMap: %q (%v)", cfg.Data["config.yaml"], err)
	}
	for _, sw := range []string{"  ascend:\n    enabled: true", "  iluvatar:\n    enabled: true"} {
		if !strings.Contains(cfg.Data["config.yaml"], sw) {
			t.Errorf("the switch %q does not stand beside HAMi's ConfigMap: %q", sw, cfg.Data["config.yaml"])
		}
	}
	mwc, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"'nvidia.com/gpu'", "'huawei.com/Ascend910B3-memory'", "'cambricon.com/vmlu'", "'iluvatar.ai/BI-V150-vgpu'"} {
		if expr := mwc.Webhooks[0].MatchConditions[0].Expression; !strings.Contains(expr, name) {
			t.Errorf("the matchConditions do not name %s, a resource of HAMi's ConfigMap: %s", name, expr)
		}
	}
	sa := "system:serviceaccount:" + ns + ":gpuadmit-webhook"
	for _, tc := range []struct {
		verb, name string
		want       bool
	}{{"get", "hami-scheduler-device", true}, {"watch", "hami-scheduler-device", true}, {"get", "kube-proxy", false},
		{"list", "", false}, {"update", "hami-scheduler-device", false}} {
		if got := c.allowed(t, sa, tc.verb, "kube-system", tc.name); got != tc.want {
			t.Errorf("%s may %s ConfigMap kube-system/%s: %v, want %v", sa, tc.verb, tc.name, got, tc.want)
		}
	}
	checksum := func() string {
		d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, "gpuadmit-webhook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations["checksum/hami-device-config"]
	}
	before := checksum()
	if before == "" {
		t.Error("the webhook pods carry no checksum of HAMi's device config")
	}
	cm.Data["device-config.yaml"] = strings.Replace(string(hami), "deviceSplitCount: 10", "deviceSplitCount: 4", 1)
	if _, err := c.kube.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.helm(t, "upgrade", "gpuadmit", chartDir, "-n", ns, "--reuse-values")
	if after := checksum(); after == before || after == "" {
		t.Errorf("HAMi's device config changed, the checksum stayed %q", after)
	}
	c.helm(t, "uninstall", "gpuadmit", "-n", ns, "--wait")
	if left := c.leftovers(t); len(left) != 0 {
		t.Errorf("helm uninstall left %v (HAMi's Role in kube-system among them?)", left)
	}
}

// allowed asks the API server whether user may verb the ConfigMap ns/name
// (name empty: any).
func (c *cluster) allowed(t *testing.T, user, verb, ns, name string) bool {
	t.Helper()
	r, err := c.kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps", Name: name}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}
