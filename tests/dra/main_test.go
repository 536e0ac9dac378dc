// Package dra_test is the integration suite of ResourceClaims charged
// against GPU quotas, on a real kube-apiserver (serving resource.k8s.io/v1)
// and etcd with the webhook server wired by pkg/server. No DRA driver,
// claim controller or scheduler runs here: the tests play them by creating
// the claims HAMi-DRA's webhook and the claim controller would create, the
// ResourceSlices a driver publishes, and the allocation a scheduler writes.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package dra_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

const nvidia = effective.NvidiaName

// TestClaims runs every scenario on one control plane, each in its own
// namespace with a limits.nvidia.com/gpumem quota.
func TestClaims(t *testing.T) {
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	ctx := t.Context()
	claims := func(ns string) claimClient { return claimClient{c.Kube.ResourceV1().ResourceClaims(ns)} }

	// HAMi-DRA's webhook turns nvidia.com/gpu: 1, gpumem: 12288 into this
	// claim (memory in bytes) and removes the extended resources from the
	// pod: the claim is what is charged.
	t.Run("a HAMi-DRA claim over the limit is denied, one that fits is charged until deleted", func(t *testing.T) {
		seed(t, c, "hami", "16384")
		if err := claims("hami").create(ctx, testclaim.HAMiDRA("hami", "hami-train-app", 1, 12288, 30)); err != nil {
			t.Fatalf("a claim for 12288 MiB into a 16384 MiB limit: %v", err)
		}
		s := local.AwaitLedger(t, c, "hami", func(s ledger.NamespaceSnapshot) bool { return s.Claims == 1 })
		if got := s.Used.Of(nvidia); got != (effective.Vector{GPU: 1, MemMiB: 12288, Cores: 30}) {
			t.Fatalf("charged %+v, want 1 GPU, 12288 MiB, 30 cores", got)
		}
		// The pod HAMi-DRA leaves behind names the claim, no extended resource: nothing more is charged.
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "hami", Labels: map[string]string{"hami.io/dra": "true"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "hami-train-app"}}}}},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "hami-train-app", ResourceClaimName: ptr.To("hami-train-app")}}}}
		if err := c.CreatePod(ctx, pod); err != nil {
			t.Fatalf("the pod using the claim: %v", err)
		}
		// A second pod sharing the claim adds nothing either: a claim counts once.
		shared := pod.DeepCopy()
		shared.Name = "train-2"
		if err := c.CreatePod(ctx, shared); err != nil {
			t.Fatalf("a second pod sharing the claim: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // a charge would have shown by now
		if s := c.Namespace("hami"); s.Used.Of(nvidia).MemMiB != 12288 || s.Reservations != 0 {
			t.Fatalf("two pods sharing one claim: used %s, %d reservations; want the claim's 12288 MiB once", s.Used, s.Reservations)
		}
		err := claims("hami").create(ctx, testclaim.HAMiDRA("hami", "hami-second-app", 1, 8192, 0))
		local.MustContain(t, "a second claim over the limit", fmt.Sprint(err), "denied", "limits.nvidia.com/gpumem", "8192 MiB", "12288 MiB used", "limit 16384 MiB")
		var out string
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out, "12288") && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			out, _, _ = c.Kubectl(ctx, nil, "get", "gpuusage", "-n", "hami", "-o", "wide")
		}
		local.MustContain(t, "kubectl get gpuusage (the summary the elected replica writes)", out, "GPUMEM", "12288/16384", "CLAIMS")
		if n, _, err := c.Kubectl(ctx, nil, "get", "gpuusage", "usage", "-n", "hami", "-o", "jsonpath={.status.summary.claims}"); err != nil || n != "1" {
			t.Errorf("the summary counts %q claims (%v), want 1", n, err)
		}
		if err := c.Kube.ResourceV1().ResourceClaims("hami").Delete(ctx, "hami-train-app", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, "hami", func(s ledger.NamespaceSnapshot) bool { return s.Claims == 0 && s.Used.IsZero() })
		if err := claims("hami").create(ctx, testclaim.HAMiDRA("hami", "hami-second-app", 1, 8192, 0)); err != nil {
			t.Fatalf("the claim refused before, once the first is deleted: %v", err)
		}
		assertRecount(t, c, "hami")
	})

	t.Run("an extended-resource pod and a claim share one limit exactly", func(t *testing.T) {
		seed(t, c, "mixed", "16384")
		if err := c.CreatePod(ctx, creates.GPUPod("mixed", "ext", "", 8192)); err != nil {
			t.Fatalf("the extended-resource pod: %v", err)
		}
		if err := claims("mixed").create(ctx, testclaim.HAMiDRA("mixed", "claim-a", 1, 8192, 0)); err != nil {
			t.Fatalf("the claim that fills the limit: %v", err)
		}
		s := local.AwaitLedger(t, c, "mixed", func(s ledger.NamespaceSnapshot) bool { return s.Claims == 1 && s.Pods == 1 })
		if got := s.Used.Of(nvidia).MemMiB; got != 16384 {
			t.Fatalf("used %d MiB, want 16384 (8192 of the pod, 8192 of the claim)", got)
		}
		err := c.CreatePod(ctx, creates.GPUPod("mixed", "one-more", "", 1))
		local.MustContain(t, "a pod of 1 MiB more", fmt.Sprint(err), "denied", "16384 MiB used")
		err = claims("mixed").create(ctx, testclaim.HAMiDRA("mixed", "claim-b", 1, 1, 0))
		local.MustContain(t, "a claim of 1 MiB more", fmt.Sprint(err), "denied", "16384 MiB used")
		assertRecount(t, c, "mixed")
	})

	t.Run("NVIDIA's whole GPUs are sized by their ResourceSlice", func(t *testing.T) {
		seed(t, c, "whole", "163840")
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node1-gpu.nvidia.com"},
			Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: ptr.To(local.NodeName),
				Pool:    resourcev1.ResourcePool{Name: local.NodeName, ResourceSliceCount: 1},
				Devices: []resourcev1.Device{gpuDevice("gpu-0", "80Gi"), gpuDevice("gpu-1", "80Gi")}}}
		if _, err := c.Kube.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInventory(t, c, 2)
		if err := claims("whole").create(ctx, nvidiaClaim("whole", "two", 2)); err != nil {
			t.Fatalf("two 80 GiB GPUs into a 160 GiB limit: %v", err)
		}
		s := local.AwaitLedger(t, c, "whole", func(s ledger.NamespaceSnapshot) bool { return s.Claims == 1 })
		if got := s.Used.Of(nvidia); got != (effective.Vector{GPU: 2, MemMiB: 163840, Cores: 200}) {
			t.Fatalf("charged %+v, want 2 GPUs, 163840 MiB, 200 cores", got)
		}
		err := claims("whole").create(ctx, nvidiaClaim("whole", "third", 1))
		local.MustContain(t, "a third GPU", fmt.Sprint(err), "denied", "81920 MiB")
	})

	t.Run("a template's claim is decided at its own create and charged once; template-after-pod and forged claims are refused", func(t *testing.T) {
		seed(t, c, "tmpl", "16384")
		tmpl := testclaim.Template("tmpl", "gpu-10g", testclaim.HAMiDRA("tmpl", "", 1, 10240, 0))
		if _, err := c.Kube.ResourceV1().ResourceClaimTemplates("tmpl").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitTemplate(t, c, "tmpl", "gpu-10g")
		if err := c.CreatePod(ctx, testclaim.TemplatePod("tmpl", "first", "gpu-10g")); err != nil {
			t.Fatalf("a pod whose template's claim fits: %v", err)
		}
		first, err := c.Kube.CoreV1().Pods("tmpl").Get(ctx, "first", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The claim controller's claim for the first pod (owned by it, with its name for the claim) is decided and reserved itself.
		claim := testclaim.GeneratedFor(testclaim.HAMiDRA("tmpl", "first-gpu-x7k2p", 1, 10240, 0), first, "gpu")
		if err := claims("tmpl").create(ctx, claim); err != nil {
			t.Fatalf("the generated claim that fits: %v", err)
		}
		recorded, err := c.Kube.ResourceV1().ResourceClaims("tmpl").Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); c.Server.Ledger.Seen(recorded.UID) == ""; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the generated claim was never recorded")
			}
		}
		if used := c.Namespace("tmpl").Used.Of(nvidia).MemMiB; used != 10240 {
			t.Fatalf("used %d MiB, want 10240: the template's claim charged once", used)
		}
		// A second pod is checked with its template's claim: it would not fit beside the first's.
		err = c.CreatePod(ctx, testclaim.TemplatePod("tmpl", "second", "gpu-10g"))
		local.MustContain(t, "a second pod whose template's claim does not fit", fmt.Sprint(err), "denied", "pod needs 10240 MiB", "10240 MiB used")
		// A claim posing as the first pod's (its annotation, its controller owner) is decided as any claim.
		forged := claim.DeepCopy()
		forged.Name = "forged"
		local.MustContain(t, "a claim claiming a pod's charge twice", fmt.Sprint(claims("tmpl").create(ctx, forged)), "denied", "claim needs 10240 MiB")
		// Issue 42: a pod naming a template that does not exist yet; the template (3 × 10 GiB) created after it; the pod touched.
		if err := c.CreatePod(ctx, testclaim.TemplatePod("tmpl", "late", "gpu-30g")); err != nil {
			t.Fatalf("a pod naming a template that does not exist yet: %v", err)
		}
		late, err := c.Kube.CoreV1().Pods("tmpl").Get(ctx, "late", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		big := testclaim.Template("tmpl", "gpu-30g", testclaim.HAMiDRA("tmpl", "", 3, 10240, 0))
		if _, err := c.Kube.ResourceV1().ResourceClaimTemplates("tmpl").Create(ctx, big, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitTemplate(t, c, "tmpl", "gpu-30g")
		late.Labels = map[string]string{"touched": "yes"}
		if _, err := c.Kube.CoreV1().Pods("tmpl").Update(ctx, late, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"late-gpu-a1b2c", "late-gpu-forged-1", "late-gpu-forged-2"} {
			lc := testclaim.GeneratedFor(testclaim.HAMiDRA("tmpl", name, 3, 10240, 0), late, "gpu")
			local.MustContain(t, fmt.Sprintf("claim %d for the late template", i), fmt.Sprint(claims("tmpl").create(ctx, lc)), "denied", "claim needs 30720 MiB")
		}
		if used := c.Namespace("tmpl").Used.Of(nvidia).MemMiB; used != 10240 {
			t.Fatalf("used %d MiB after the template-after-pod sequence, want 10240", used)
		}
		assertRecount(t, c, "tmpl")
		if err := c.Kube.CoreV1().Pods("tmpl").Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The claim holds its devices until it is deleted (the garbage collector would, after the pod).
		time.Sleep(300 * time.Millisecond)
		if s := c.Namespace("tmpl"); s.Used.Of(nvidia).MemMiB != 10240 {
			t.Fatalf("after the pod's deletion the claim's charge is %d MiB, want 10240 until the claim goes", s.Used.Of(nvidia).MemMiB)
		}
		if err := c.Kube.ResourceV1().ResourceClaims("tmpl").Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, "tmpl", func(s ledger.NamespaceSnapshot) bool { return s.Used.IsZero() && s.Claims == 0 })
	})

	t.Run("a claim of an ungoverned class is not looked at", func(t *testing.T) {
		seed(t, c, "other", "1")
		cl := testclaim.HAMiDRA("other", "fpga", 4, 0, 0)
		cl.Spec.Devices.Requests[0].Exactly.DeviceClassName = "fpga.example.com"
		cl.Spec.Devices.Requests[0].Exactly.Capacity = nil
		cl.Spec.Devices.Requests[0].Exactly.Selectors = nil
		if err := claims("other").create(ctx, cl); err != nil {
			t.Fatalf("an FPGA claim: %v", err)
		}
		if s := c.Namespace("other"); s.Claims != 0 || !s.Used.IsZero() {
			t.Fatalf("an ungoverned claim is charged: %d claims, used %s", s.Claims, s.Used)
		}
	})
}

type claimClient struct {
	api interface {
		Create(ctx context.Context, c *resourcev1.ResourceClaim, o metav1.CreateOptions) (*resourcev1.ResourceClaim, error)
	}
}

func (cc claimClient) create(ctx context.Context, c *resourcev1.ResourceClaim) error {
	_, err := cc.api.Create(ctx, c, metav1.CreateOptions{})
	return err
}

func seed(t *testing.T, c *local.Cluster, ns, gpumem string) {
	t.Helper()
	if err := c.Seed(t.Context(), ns, gpumem); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Limits[nvidia].MemMiB != nil })
}

// assertRecount checks the running server's ledger of ns against one built
// from what the API server holds now.
func assertRecount(t *testing.T, c *local.Cluster, ns string) {
	t.Helper()
	want, err := c.Recount(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	got := local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Used.Equal(want.Used) && s.Claims == want.Claims })
	if !got.Used.Equal(want.Used) {
		t.Fatalf("ledger %s, recount %s", got.Used, want.Used)
	}
}

func gpuDevice(name, mem string) resourcev1.Device {
	return resourcev1.Device{Name: name,
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: ptr.To("gpu")}},
		Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse(mem)}}}
}

func nvidiaClaim(ns, name string, count int64) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpus",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}}}}}
}

// waitTemplate waits until the server's ledger knows the template.
func waitTemplate(t *testing.T, c *local.Cluster, ns, name string) {
	t.Helper()
	for range 500 {
		if c.Server.Ledger.Template(ns, name) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the ledger did not learn ResourceClaimTemplate %s/%s", ns, name)
}

// waitInventory waits until the server's ledger knows n devices.
func waitInventory(t *testing.T, c *local.Cluster, n int) {
	t.Helper()
	for range 500 {
		if c.Server.Ledger.Inventory().Len() >= n {
			return
		}
		select {
		case <-t.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("the ledger did not learn the ResourceSlice's %d devices", n)
}
