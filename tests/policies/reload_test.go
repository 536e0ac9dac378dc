package policies_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

const customPolicy = `package gpuadmit.admission

deny contains msg if {
	input.namespace == "frozen"
	msg := "namespace frozen: GPU pods are frozen by the operator"
}
`

const customPolicyTest = `package gpuadmit.admission_test

import data.gpuadmit.admission

test_frozen if {
	"namespace frozen: GPU pods are frozen by the operator" in admission.deny with input as {"namespace": "frozen"}
}
`

// testPolicyReload: a broken policy ConfigMap is rejected (the active set
// stays and the rejection is written on the ConfigMap); a good one is
// activated without a restart.
func testPolicyReload(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	if err := c.Seed(ctx, "frozen", "24576"); err != nil {
		t.Fatal(err)
	}
	cms := c.Kube.CoreV1().ConfigMaps(local.Namespace)
	before := c.Server.Engine.Status().Revision
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-policy", Labels: map[string]string{"gpuadmit.io/policy": "true"}},
		Data: map[string]string{"frozen.rego": customPolicy + "deny contains msg if {\n", "frozen_test.rego": customPolicyTest}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	status := waitAnnotation(t, c, "team-policy", "rejected:")
	local.MustContain(t, "status of the broken policy", status, "frozen.rego", "still active: revision "+before)
	if got := c.Server.Engine.Status().Revision; got != before {
		t.Fatalf("a broken policy replaced the active set: %s -> %s", before, got)
	}
	if err := c.CreatePod(ctx, creates.GPUPod("frozen", "while-broken", "", 1024)); err != nil {
		t.Fatalf("the last good policy set should still admit: %v", err)
	}

	cm, err := cms.Get(ctx, "team-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["frozen.rego"] = customPolicy
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnnotation(t, c, "team-policy", "active:")
	err = c.CreatePod(ctx, creates.GPUPod("frozen", "after-reload", "", 1024))
	if err == nil || !strings.Contains(err.Error(), "GPU pods are frozen by the operator") {
		t.Fatalf("the reloaded policy did not deny: %v", err)
	}
	if err := cms.Delete(ctx, "team-policy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
