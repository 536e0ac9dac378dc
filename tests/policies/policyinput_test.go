package policies_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

// bronzePolicy reads the three inputs an operator's rule needs that the
// built-in rules do not: the pod's labels, the namespace's labels and the
// requesting user's groups.
const bronzePolicy = `package gpuadmit.admission

deny contains msg if {
	input.operation == "CREATE"
	input.namespaceLabels["gpu-tier"] == "bronze"
	not input.pod.labels["cost-center"]
	not "ml-leads" in input.userInfo.groups
	msg := sprintf("namespace %q: pod %q: GPU pods in bronze namespaces need a cost-center label (user %q is not in ml-leads)", [
		input.namespace, input.pod.name, input.userInfo.username,
	])
}
`

const bronzePolicyTest = `package bronze_test

import data.gpuadmit.admission

bronze(labels, groups) := {
	"operation": "CREATE", "namespace": "n", "namespaceLabels": {"gpu-tier": "bronze"},
	"pod": {"name": "p", "labels": labels}, "userInfo": {"username": "u", "groups": groups},
}

test_unlabelled_denied if {
	count([m | some m in admission.deny with input as bronze({}, []); contains(m, "cost-center")]) == 1
}

test_labelled_or_ml_leads_allowed if {
	count([m | some m in admission.deny with input as bronze({"cost-center": "1"}, []); contains(m, "cost-center")]) == 0
	count([m | some m in admission.deny with input as bronze({}, ["ml-leads"]); contains(m, "cost-center")]) == 0
}
`

// testPolicyInputs: a ConfigMap policy using pod.labels, namespaceLabels
// and userInfo.groups denies and allows pods created through kubectl as
// impersonated users; the same ConfigMap edited with a misspelt field is
// rejected with the field named in its status, and the last good set keeps
// deciding.
func testPolicyInputs(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "bronze-team"
	if err := c.CreateNamespace(ctx, ns, map[string]string{"gpu-tier": "bronze"}); err != nil {
		t.Fatal(err)
	}
	// Impersonated users may create pods there (RBAC runs before admission).
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-creator", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pod-creator", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-creator"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}}
	if _, err := c.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := c.Kube.CoreV1().ConfigMaps(local.Namespace)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bronze-policy", Labels: map[string]string{"gpuadmit.io/policy": "true"}},
		Data: map[string]string{"bronze.rego": bronzePolicy, "bronze_test.rego": bronzePolicyTest}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnnotation(t, c, "bronze-policy", "active:")
	good := c.Server.Engine.Status().Revision

	kubectlCreate := func(name, labels string, as ...string) (string, error) {
		pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns + ", labels: {" + labels + "}}\n" +
			"spec:\n  containers:\n  - name: app\n    image: registry.example/app:1\n" +
			"    resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}\n"
		_, stderr, err := c.Kubectl(ctx, []byte(pod), append(as, "create", "-f", "-")...)
		return stderr, err
	}
	steps := []struct {
		name, pod, labels string
		as                []string
		wantDenied        string // "" means created
	}{
		{name: "no label, not in ml-leads: denied", pod: "bob-1", as: []string{"--as", "bob", "--as-group", "developers"},
			wantDenied: `admission webhook "validate.gpuadmit.io" denied the request: namespace "bronze-team": pod "bob-1": GPU pods in bronze namespaces need a cost-center label (user "bob" is not in ml-leads)`},
		{name: "labelled: created", pod: "bob-2", labels: "cost-center: '42'", as: []string{"--as", "bob", "--as-group", "developers"}},
		{name: "no label, in ml-leads: created", pod: "alice-1", as: []string{"--as", "alice", "--as-group", "ml-leads"}},
	}
	for _, s := range steps {
		stderr, err := kubectlCreate(s.pod, s.labels, s.as...)
		switch {
		case s.wantDenied == "" && err != nil:
			t.Errorf("%s: %v: %s", s.name, err, stderr)
		case s.wantDenied != "" && (err == nil || !strings.Contains(stderr, s.wantDenied)):
			t.Errorf("%s: err %v, stderr %q; want a denial containing %q", s.name, err, stderr, s.wantDenied)
		case s.wantDenied != "":
			t.Logf("%s: kubectl said: %s", s.name, strings.TrimSpace(stderr))
		}
	}

	// A misspelt field is a compile error naming it; the last good set stays.
	cm, err := cms.Get(ctx, "bronze-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["bronze.rego"] = strings.Replace(bronzePolicy, "input.pod.labels[", "input.pod.label[", 1)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	status := waitAnnotation(t, c, "bronze-policy", "rejected:")
	local.MustContain(t, "status of the misspelt policy", status, "bronze.rego:6: rego_type_error: undefined ref: input.pod.label", "still active: revision "+good)
	t.Logf("status of the misspelt policy: %s", status)
	if got := c.Server.Engine.Status().Revision; got != good {
		t.Fatalf("a misspelt policy replaced the active set: %s -> %s", good, got)
	}
	if stderr, err := kubectlCreate("bob-3", "", "--as", "bob", "--as-group", "developers"); err == nil || !strings.Contains(stderr, "need a cost-center label") {
		t.Errorf("the last good set should still deny: err %v, stderr %q", err, stderr)
	}
	if err := cms.Delete(ctx, "bronze-policy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
