package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// whyNS is the namespace of the why test: 24 GiB of GPU memory.
const whyNS = "team-why"

// whyJSON is the part of `gpuadmit why -o json` the test checks.
type whyJSON struct {
	Kind, Name                          string
	Desired, Existing, Running, Missing int32
	LastDenial                          *struct{ On, Reason, Message string }
	Short                               []struct {
		Resource                      string
		Needed, Headroom, Short, Used int64
		Quota                         string
	}
}

// testWhy: a Deployment of 3 × 8 GiB into 24 GiB of which a pod holds 8,
// its ReplicaSet's pods
// created as the ReplicaSet controller would (no controller manager runs
// here): two admitted, the third denied, a forged denial Event of
// gpuadmit's component changing none of it. The denial is an Event on the
// ReplicaSet and on the Deployment; the namespace's GPUUsage lists the
// Deployment; `gpuadmit why deployment/web` says 3 wanted, 2 exist, the
// last denial, and that 8192 MiB of ResourceQuota gpu-quota must be freed
// or raised (exit 1), as JSON and as a table.
func (s *suite) testWhy(t *testing.T) {
	ctx := t.Context()
	if err := s.c.CreateNamespace(ctx, whyNS, nil); err != nil {
		t.Fatal(err)
	}
	q := testquota.New(whyNS, "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "24576"})
	q.UID = ""
	if _, err := s.c.Kube.CoreV1().ResourceQuotas(whyNS).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tmpl := testpod.New("t").App("app", testpod.GPU(1), testpod.Mem(8192)).Build()
	// 8 GiB taken by another pod: the Deployment fits the limit (the
	// workload check admits it), not today's headroom.
	other := testpod.New("batch").NS(whyNS).App("app", testpod.GPU(1), testpod.Mem(8192)).Build()
	other.UID, other.Status = "", corev1.PodStatus{}
	if _, err := s.c.Kube.CoreV1().Pods(whyNS).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec}
	dep, err := s.c.Kube.AppsV1().Deployments(whyNS).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.c.Kube.AppsV1().ReplicaSets(whyNS).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A forged denial Event, as anyone allowed to create Events may write:
	// listed, informational, and it changes no decision below.
	forged := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: whyNS},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "ghost", Namespace: whyNS},
		Reason:         "GPUQuotaExceeded", Message: "forged", Count: 1000, Type: corev1.EventTypeWarning,
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), ReportingController: "gpuadmit-webhook", ReportingInstance: "forger",
		Source: corev1.EventSource{Component: "gpuadmit-webhook"}}
	if _, err := s.c.Kube.CoreV1().Events(whyNS).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	denied := 0
	for i := range 3 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-7d9f-%d", i), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: *tmpl.Spec.DeepCopy()}
		if _, err := s.c.Kube.CoreV1().Pods(whyNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			denied++
			if !strings.Contains(err.Error(), "denied") {
				t.Fatalf("pod %d: %v", i, err)
			}
		}
	}
	if denied != 1 {
		t.Fatalf("%d of 3 pods denied, want the third only (a forged Event changes no decision)", denied)
	}
	s.awaitWorkloadEvent(t)
	s.awaitDeniedWorkload(t)

	res := s.plugin(t, "why", "deployment/web", "-n", whyNS, "-o", "json")
	if res.code != 1 {
		t.Fatalf("why: exit %d, want 1 (short): %s%s", res.code, res.stdout, res.stderr)
	}
	var got whyJSON
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, res.stdout)
	}
	if got.Kind != "Deployment" || got.Desired != 3 || got.Existing != 2 || got.Missing != 1 || got.LastDenial == nil ||
		got.LastDenial.On != "Deployment/web" || got.LastDenial.Reason != "GPUQuotaExceeded" ||
		!strings.Contains(got.LastDenial.Message, "ReplicaSet web-7d9f (3 replicas): pod team-why/web-7d9f-2 denied") ||
		len(got.Short) != 1 || got.Short[0].Resource != "nvidia.com/gpumem" || got.Short[0].Needed != 8192 ||
		got.Short[0].Headroom != 0 || got.Short[0].Short != 8192 || got.Short[0].Used != 24576 || got.Short[0].Quota != "gpu-quota" {
		t.Errorf("why -o json:\n%s", res.stdout)
	}
	table := s.kubectl(t, nil, "gpuadmit", "why", "deploy/web", "-n", whyNS)
	for _, want := range []string{"Deployment/web   3         2          0         1",
		"GPUQuotaExceeded on Deployment/web", "nvidia.com/gpumem   8192     0          8192    gpu-quota   24576   24576   0", "Gang: no gang"} {
		if table.code != 1 || !strings.Contains(table.stdout, want) {
			t.Errorf("kubectl gpuadmit why (exit %d) lacks %q:\n%s%s", table.code, want, table.stdout, table.stderr)
		}
	}
}

// awaitWorkloadEvent waits for the denial's Event on Deployment web,
// naming its ReplicaSet, and the ReplicaSet's own, marked as recorded on it.
func (s *suite) awaitWorkloadEvent(t *testing.T) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := s.c.Kube.CoreV1().Events(whyNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		var onDeployment, onRS bool
		for _, e := range list.Items {
			seen = append(seen, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Reason+": "+e.Message)
			onDeployment = onDeployment || e.InvolvedObject.Kind == "Deployment" && e.Reason == "GPUQuotaExceeded" &&
				strings.HasPrefix(e.Message, "ReplicaSet web-7d9f (3 replicas): pod team-why/web-7d9f-2 denied")
			onRS = onRS || e.InvolvedObject.Kind == "ReplicaSet" && e.Annotations["gpuadmit.io/workload"] == "Deployment/web"
		}
		return onDeployment && onRS, nil
	})
	if err != nil {
		t.Fatalf("no denial Event on Deployment web and its ReplicaSet: %v\n%s", err, strings.Join(seen, "\n"))
	}
}

// awaitDeniedWorkload waits for team-why's GPUUsage to list Deployment web
// and the forged Event's ghost: informational, as the Events are.
func (s *suite) awaitDeniedWorkload(t *testing.T) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(s.c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var u gpuadmitv1.GPUUsage
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKey{Namespace: whyNS, Name: gpuadmitv1.ObjectName}, &u); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		names := map[string]string{}
		for _, d := range u.Status.DeniedWorkloads {
			names[d.Kind+"/"+d.Name] = d.Reason
		}
		return len(names) == 2 && names["Deployment/web"] == "GPUQuotaExceeded" && names["Deployment/ghost"] == "GPUQuotaExceeded", nil
	})
	if err != nil {
		t.Fatalf("GPUUsage %s does not list Deployment web: %v; deniedWorkloads %+v", whyNS, err, u.Status.DeniedWorkloads)
	}
}
