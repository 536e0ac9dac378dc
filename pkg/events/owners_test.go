package events

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func controllerRef(apiVersion, kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

func replicaSet(name string, uid types.UID, replicas int32, owners []metav1.OwnerReference) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: uid, OwnerReferences: owners},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)}}
}

// recordedEvents are the Events written in team-a, by kind/name, each
// "reason|message|annotation".
func recordedEvents(t *testing.T, kube *kubefake.Clientset) map[string]string {
	t.Helper()
	list, err := kube.CoreV1().Events("team-a").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range list.Items {
		got[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] = e.Reason + "|" + e.Message + "|" + e.Annotations[WorkloadAnnotation]
	}
	return got
}

// TestDenialEventsOnTheWorkload: a denial about a Deployment's
// ReplicaSet (a CronJob's Job) is also an Event on the Deployment
// (CronJob), naming the ReplicaSet and its size; a reference the pod
// forged (another UID than the object of that name), an owner of another
// kind, a ReplicaSet gone and a read that fails record the first Event
// only, never one on an object the pod's owner does not name.
func TestDenialEventsOnTheWorkload(t *testing.T) {
	const msg = "pod team-a/web-7d9f-x denied: over the limit"
	rsRef := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid", Namespace: "team-a"}
	jobRef := corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Name: "nightly-1", UID: "job-uid", Namespace: "team-a"}
	ofDeployment := replicaSet("web-7d9f", "rs-uid", 4, controllerRef("apps/v1", "Deployment", "web", "dep-uid"))
	for _, tt := range []struct {
		name    string
		objs    []client.Object
		ref     corev1.ObjectReference
		failGet bool
		want    map[string]string
	}{
		{name: "ReplicaSet of a Deployment", objs: []client.Object{ofDeployment}, ref: rsRef, want: map[string]string{
			"ReplicaSet/web-7d9f": "GPUQuotaExceeded|" + msg + "|Deployment/web",
			"Deployment/web":      "GPUQuotaExceeded|ReplicaSet web-7d9f (4 replicas): " + msg + "|"}},
		{name: "Job of a CronJob", ref: jobRef, objs: []client.Object{&batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "nightly-1", UID: "job-uid", OwnerReferences: controllerRef("batch/v1", "CronJob", "nightly", "cj-uid")},
			Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](8)}}}, want: map[string]string{
			"Job/nightly-1":   "GPUQuotaExceeded|" + msg + "|CronJob/nightly",
			"CronJob/nightly": "GPUQuotaExceeded|Job nightly-1 (8 in parallel): " + msg + "|"}},
		{name: "forged: the pod names another UID than the ReplicaSet's", objs: []client.Object{ofDeployment},
			ref:  corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "forged", Namespace: "team-a"},
			want: map[string]string{"ReplicaSet/web-7d9f": "GPUQuotaExceeded|" + msg + "|"}},
		{name: "owner of another kind", ref: rsRef,
			objs: []client.Object{replicaSet("web-7d9f", "rs-uid", 4, controllerRef("example.com/v1", "Deployment", "web", "dep-uid"))},
			want: map[string]string{"ReplicaSet/web-7d9f": "GPUQuotaExceeded|" + msg + "|"}},
		{name: "ReplicaSet gone", ref: rsRef, want: map[string]string{"ReplicaSet/web-7d9f": "GPUQuotaExceeded|" + msg + "|"}},
		{name: "read fails", ref: rsRef, objs: []client.Object{ofDeployment}, failGet: true,
			want: map[string]string{"ReplicaSet/web-7d9f": "GPUQuotaExceeded|" + msg + "|"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reader := client.Reader(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tt.objs...).Build())
			if tt.failGet {
				reader = interceptor.NewClient(reader.(client.WithWatch), interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return errors.New("the API server is away")
				}})
			}
			kube := kubefake.NewClientset()
			ev := New(kube, "replica-0", logr.Discard()).WithOwners(reader, nil)
			ev.Start()
			ev.Denied(t.Context(), tt.ref, "GPUQuotaExceeded", msg)
			ev.Stop()
			got := recordedEvents(t, kube)
			if len(got) != len(tt.want) {
				t.Fatalf("Events %v\nwant %v", got, tt.want)
			}
			for k, w := range tt.want {
				if got[k] != w {
					t.Errorf("Event on %s: %q, want %q", k, got[k], w)
				}
			}
		})
	}
}

// TestOwnerReadsAreBounded: a ReplicaSet retrying its pod does not make a
// read per denial (one a minute), and a read that hangs holds a denial's
// Event for ownerReadTimeout, no longer, then records it on the first owner.
func TestOwnerReadsAreBounded(t *testing.T) {
	rsRef := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid", Namespace: "team-a"}
	t.Run("remembered", func(t *testing.T) {
		var reads atomic.Int32
		base := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
			WithObjects(replicaSet("web-7d9f", "rs-uid", 4, controllerRef("apps/v1", "Deployment", "web", "dep-uid"))).Build()
		reader := interceptor.NewClient(base, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			reads.Add(1)
			return c.Get(ctx, k, o, opts...)
		}})
		clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
		o := &owners{reader: reader, clock: clk, seen: map[ownerKey]ownerEntry{}}
		for range 50 {
			if _, ok := o.workloadOf(t.Context(), rsRef); !ok {
				t.Fatal("no Deployment found")
			}
		}
		if reads.Load() != 1 {
			t.Fatalf("%d reads for 50 denials within a minute, want 1", reads.Load())
		}
		clk.SetTime(clk.Now().Add(ownerTTL))
		o.workloadOf(t.Context(), rsRef)
		if reads.Load() != 2 {
			t.Fatalf("%d reads after a minute, want 2", reads.Load())
		}
	})
	t.Run("a hanging read", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			reader := interceptor.NewClient(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(), interceptor.Funcs{
				Get: func(ctx context.Context, _ client.WithWatch, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
					<-ctx.Done()
					return ctx.Err()
				}})
			kube := kubefake.NewClientset()
			ev := New(kube, "replica-0", logr.Discard()).WithOwners(reader, nil)
			ev.Start()
			start := time.Now()
			ev.Denied(context.Background(), rsRef, "GPUQuotaExceeded", "pod team-a/x denied")
			if d := time.Since(start); d != ownerReadTimeout {
				t.Errorf("Denied took %s, want the read's bound %s", d, ownerReadTimeout)
			}
			ev.Stop()
			if got := recordedEvents(t, kube); len(got) != 1 || !strings.HasPrefix(got["ReplicaSet/web-7d9f"], "GPUQuotaExceeded|") {
				t.Errorf("Events %v, want the ReplicaSet's only", got)
			}
		})
	})
}

// TestOwnerCacheIsPerReference: the API server does not check an owner
// reference's UID, so a pod of team-b naming team-a's ReplicaSet UID right
// after a team-a denial must not be handed team-a's walk (found by the
// review of issue 45: the cache was keyed by UID alone).
func TestOwnerCacheIsPerReference(t *testing.T) {
	rs := replicaSet("web-7d9f", "rs-uid", 4, controllerRef("apps/v1", "Deployment", "web", "dep-uid"))
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(rs).Build()
	o := &owners{reader: c, clock: clocktesting.NewFakeClock(time.Unix(1000, 0)), seen: map[ownerKey]ownerEntry{}}
	a := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid", Namespace: "team-a"}
	if w, ok := o.workloadOf(t.Context(), a); !ok || w.ref.Namespace != "team-a" {
		t.Fatalf("team-a's own denial: %+v %v", w, ok)
	}
	for _, forged := range []corev1.ObjectReference{
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "anything", UID: "rs-uid", Namespace: "team-b"},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid", Namespace: "team-b"},
	} {
		if w, ok := o.workloadOf(t.Context(), forged); ok {
			t.Errorf("a %s denial naming team-a's ReplicaSet UID is walked to %s %s/%s", forged.Namespace, w.ref.Kind, w.ref.Namespace, w.ref.Name)
		}
	}
}
