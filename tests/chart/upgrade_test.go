package chart_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestUpgradeBesideOldReplicasRefused attacks the upgrade from a release
// that kept the reservations in GPUUsage: helm must refuse to install the
// GPUReservationSet CRD while replicas of that release run (old and new
// replicas would not count each other's admissions, and the new GPUUsage
// CRD prunes the old ones' reservations), and go ahead once they are
// scaled to 0.
func TestUpgradeBesideOldReplicasRefused(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	const ns = "gpuadmit-system"
	c.helm(t, "install", "gpuadmit", chartDir, "-n", ns, "--create-namespace", "--set", "crds.keep=false")

	// The previous release: GPUUsage's CRD alone, its replicas running.
	crds := c.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if err := crds.Delete(ctx, "gpureservationsets.gpuadmit.io", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, "gpureservationsets.gpuadmit.io", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the GPUReservationSet CRD is still there: %v", err)
	}
	setReplicas := func(n int32) {
		d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, "gpuadmit-webhook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status.Replicas, d.Status.ReadyReplicas = n, n
		if _, err := c.kube.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setReplicas(3)
	cmd := exec.Command(helmBin(t), "upgrade", "gpuadmit", chartDir, "-n", ns, "--reuse-values", "--kubeconfig", c.kubeconfig)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+c.helmHome+"/config", "HELM_CACHE_HOME="+c.helmHome+"/cache",
		"HELM_DATA_HOME="+c.helmHome+"/data")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Scale them to 0 first") {
		t.Fatalf("helm upgrade beside 3 replicas of the previous release: err %v, want a refusal saying to scale them to 0:\n%s", err, out)
	}
	if _, err := crds.Get(ctx, "gpureservationsets.gpuadmit.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused upgrade installed the GPUReservationSet CRD (%v)", err)
	}

	setReplicas(0)
	c.helm(t, "upgrade", "gpuadmit", chartDir, "-n", ns, "--reuse-values")
	if _, err := crds.Get(ctx, "gpureservationsets.gpuadmit.io", metav1.GetOptions{}); err != nil {
		t.Fatalf("after scaling to 0, the upgrade did not install the GPUReservationSet CRD: %v", err)
	}
}
