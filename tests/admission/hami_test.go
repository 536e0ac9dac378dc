package admission_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// limitsPod is a one-container pod with the given limits.
func limitsPod(ns, name string, limits map[string]string) *corev1.Pod {
	rl := corev1.ResourceList{}
	for k, v := range limits {
		rl[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Limits: rl}}}}}
}

// testZeroIsTheWholeCard: in a namespace at 20 of 24 GiB, a pod asking
// gpumem 0 or gpumem-percentage 0 is denied, and the message names the
// whole card it would take (HAMi books the whole card for a zero: its
// TestZeroMemoryPercentageIsAccountedAsWholeCard).
func testZeroIsTheWholeCard(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	if err := c.Seed(ctx, "zeros", "24576"); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, "zeros", func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
	if err := c.CreatePod(ctx, creates.GPUPod("zeros", "twenty", "", 20480)); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, "zeros", func(s ledger.NamespaceSnapshot) bool {
		return s.Used.Of("nvidia").MemMiB == 20480 && s.Reservations == 0
	})
	for _, tc := range []struct {
		name   string
		limits map[string]string
	}{
		{"gpumem-zero", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "0"}},
		{"percentage-zero", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "0"}},
		{"bare-count", map[string]string{"nvidia.com/gpu": "1"}},
	} {
		err := c.CreatePod(ctx, limitsPod("zeros", tc.name, tc.limits))
		if err == nil {
			t.Errorf("%s: admitted into a namespace at 20 of 24 GiB", tc.name)
			continue
		}
		local.MustContain(t, tc.name, err.Error(), "pod needs 24576 MiB", "20480 MiB used", "limit 24576 MiB",
			`container "app" takes the whole device: 1 x 24576 MiB`)
	}
	if s := c.Namespace("zeros"); s.Used.Of("nvidia").MemMiB != 20480 || s.Reservations != 0 {
		t.Errorf("denied pods were charged: used %d MiB, %d reservations", s.Used.Of("nvidia").MemMiB, s.Reservations)
	}
}

// testPendingSharesAreCharged: whole-card and 50 % pods created one after
// the other, each seen by the watch before the next, stay Pending: their
// records must charge what their admission resolved (HAMi's Fit books
// Totalmem * pct / 100 of the chosen card), so exactly 1 whole card, and
// exactly 2 halves, fit an empty 24 GiB namespace on one 24 GiB node.
func testPendingSharesAreCharged(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	for _, tc := range []struct {
		ns     string
		limits map[string]string
		want   int
	}{
		{"whole-cards", map[string]string{"nvidia.com/gpu": "1"}, 1},
		{"half-cards", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "50"}, 2},
	} {
		if err := c.Seed(ctx, tc.ns, "24576"); err != nil {
			t.Fatal(err)
		}
		local.AwaitLedger(t, c, tc.ns, func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
		admitted := 0
		for i := range 10 {
			err := c.CreatePod(ctx, limitsPod(tc.ns, fmt.Sprintf("p%d", i), tc.limits))
			switch {
			case err == nil:
				admitted++
			case !strings.Contains(err.Error(), "limit 24576 MiB"):
				t.Fatalf("%s: refused for another reason: %v", tc.ns, err)
			}
			// The watch records each admitted pod (Pending) before the next create.
			s := local.AwaitLedger(t, c, tc.ns, func(s ledger.NamespaceSnapshot) bool { return s.Pods == admitted && s.Reservations == 0 })
			if s.Used.Of("nvidia").MemMiB > 24576 {
				t.Fatalf("%s: %d MiB recorded, over the 24576 MiB limit", tc.ns, s.Used.Of("nvidia").MemMiB)
			}
		}
		if admitted != tc.want {
			t.Errorf("%s: %d of 10 pending pods admitted, want exactly %d", tc.ns, admitted, tc.want)
		}
		t.Logf("%s: %d of 10 admitted; ledger %+v", tc.ns, admitted, c.Namespace(tc.ns).Used)
	}
}
