package workloads_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

// replicaSetController is the user the ReplicaSet controller creates pods
// as with --use-service-account-credentials, as in a real cluster (and as
// gpuadmit's userInfo policies see it).
const replicaSetController = "system:serviceaccount:kube-system:replicaset-controller"

// testControllerIdentity checks who creates a Deployment's pods: a
// ValidatingAdmissionPolicy refusing every pod of the namespace names the
// creating user in its message, which the ReplicaSet controller's
// FailedCreate Event carries. Without --use-service-account-credentials
// every controller would act as system:kube-controller-manager, whose
// bootstrap RBAC role creates no ReplicaSet: the cluster does not start
// (checked: the readiness probe's Deployment never gets one).
func testControllerIdentity(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "ident"
	if err := c.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	refuseEveryPod(t, c, ns)
	d := deployment(ns, "who", 1, 0)
	d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{} // no GPU: gpuadmit's webhooks do not see it
	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && e.InvolvedObject.Kind == "ReplicaSet" {
				seen = append(seen, e.Message)
				if strings.Contains(e.Message, "created by "+replicaSetController+";") {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedCreate Event naming %s: %v; the ReplicaSet's: %q", replicaSetController, err, seen)
	}
}

// refuseEveryPod installs a ValidatingAdmissionPolicy refusing every pod
// created in ns with a message naming its creator, and waits until the
// API server applies it (a pod created as the test's admin is refused).
func refuseEveryPod(t *testing.T, c *local.Cluster, ns string) {
	t.Helper()
	ctx := t.Context()
	adm := c.Kube.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "name-the-creator"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false",
				MessageExpression: `"created by " + request.userInfo.username + ";"`}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "name-the-creator"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}}
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{})
		if err == nil {
			return false, c.Kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		return strings.Contains(err.Error(), "created by"), nil
	})
	if err != nil {
		t.Fatalf("the ValidatingAdmissionPolicy never refused a pod: %v", err)
	}
}
