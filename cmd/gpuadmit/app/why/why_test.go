package why

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

const ns = "team-a"

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// template is a pod template of one container of 1 GPU and memMiB.
func template(memMiB int64, annotations map[string]string) corev1.PodTemplateSpec {
	p := testpod.New("t").App("c", testpod.GPU(1), testpod.Mem(memMiB)).Build()
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: p.Spec}
}

func owned(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

// pod is a pod of the workload whose controller has uid, in phase.
func pod(name string, uid types.UID, phase corev1.PodPhase) *corev1.Pod {
	p := testpod.New(name).NS(ns).UID(name).App("c", testpod.GPU(1), testpod.Mem(8192)).Phase(phase).Build()
	p.OwnerReferences = owned("ReplicaSet", "web-1", uid)
	return p
}

// event is a denial's Event about kind/name.
func event(name, kind, on, component string, count int32, at time.Duration, msg string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: kind, Name: on, Namespace: ns},
		Reason:         "GPUQuotaExceeded", Message: msg, Count: count, LastTimestamp: metav1.NewTime(t0.Add(at)),
		ReportingController: component, Source: corev1.EventSource{Component: component}}
}

// web is Deployment web of replicas pods of 1 GPU and 8 GiB, its
// ReplicaSet web-1, and the pods given.
func web(replicas int32, annotations map[string]string, pods ...*corev1.Pod) []runtime.Object {
	objs := []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "dep"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: template(8192, annotations)}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1", UID: "rs", OwnerReferences: owned("Deployment", "web", "dep")},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: template(8192, annotations)}},
		// another Deployment's ReplicaSet and pod: not web's
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-1", UID: "other-rs", OwnerReferences: owned("Deployment", "other", "other")}},
		pod("other-1-a", "other-rs", corev1.PodRunning),
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	return objs
}

// usage is team-a's snapshot: a quota of 24 GiB, used GiB charged.
func usage(usedMiB int64) ledger.NamespaceSnapshot {
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	l.UpsertQuota(testquota.New(ns, "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "24576"}))
	if usedMiB > 0 {
		l.UpsertPod(testpod.New("used").NS(ns).UID("used").App("c", testpod.GPU(1), testpod.Mem(usedMiB)).Node("n").Phase(corev1.PodRunning).Build())
	}
	return l.Namespace(ns, nil)
}

func running3() []*corev1.Pod {
	return []*corev1.Pod{pod("web-1-a", "rs", corev1.PodRunning), pod("web-1-b", "rs", corev1.PodRunning),
		pod("web-1-c", "rs", corev1.PodPending), pod("web-1-done", "rs", corev1.PodSucceeded)}
}

// TestExplain: desired, existing (not finished) and running pods of the
// workload's own controllers only; the last denial from gpuadmit's Events
// on the workload (not another component's, not another workload's); the
// limits the missing pods pass, with the headroom, the shortfall and the
// quota; none when they fit or nothing is missing; the gang, held or not.
func TestExplain(t *testing.T) {
	deniedMsg := "ReplicaSet web-1 (4 replicas): pod team-a/web-1-x denied: over the limit"
	evs := []runtime.Object{
		event("e1", "Deployment", "web", "gpuadmit-webhook", 4, 0, "older"),
		event("e2", "Deployment", "web", "gpuadmit-webhook", 2, time.Minute, deniedMsg),
		event("e3", "ReplicaSet", "web-1", "gpuadmit-webhook", 6, 30*time.Second, "pod team-a/web-1-x denied: over the limit"),
		event("forged", "Deployment", "web", "someone", 100, time.Hour, "not gpuadmit's"),
		event("other", "Deployment", "other", "gpuadmit-webhook", 1, 2*time.Hour, "another workload"),
	}
	hold := func(kind, name string, slots int32, ended string) gpuadmitv1.GangHold {
		return gpuadmitv1.GangHold{Kind: kind, Name: name, MinCount: 4, Slots: slots, Pods: []types.UID{"a", "b"}, Writer: "r",
			HeldSince: metav1.NewTime(t0), Ended: ended}
	}
	set := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gpuadmitv1.ObjectName},
		Status: gpuadmitv1.GPUReservationSetStatus{Gangs: []gpuadmitv1.GangHold{
			hold(gpuadmitv1.GangOptIn, "train", 2, ""), hold(gpuadmitv1.GangPodGroup, "train", 0, gpuadmitv1.GangReleased),
			hold(gpuadmitv1.GangPodGroup, "ended", 0, gpuadmitv1.GangConsumed)}}}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(set)
	if err != nil {
		t.Fatal(err)
	}
	holding := &unstructured.Unstructured{Object: obj}
	holding.SetAPIVersion("gpuadmit.io/v1alpha1")
	holding.SetKind("GPUReservationSet")
	for _, tt := range []struct {
		name                               string
		objs                               []runtime.Object
		set                                *unstructured.Unstructured
		podGroup                           string
		usedMiB                            int64
		desired, existing, running, missed int32
		last                               string
		short                              []shortfall
		gang                               *gang
	}{
		{name: "short: 1 pod of 8 GiB, no headroom", objs: append(web(4, nil, running3()...), evs...), usedMiB: 24576,
			desired: 4, existing: 3, running: 2, missed: 1, last: "GPUQuotaExceeded Deployment/web 6 " + deniedMsg,
			short: []shortfall{{Family: "nvidia", Resource: "nvidia.com/gpumem", PerPod: 8192, Needed: 8192, Headroom: 0, Short: 8192,
				Limit: 24576, Used: 24576, Reserved: 0, Quota: "gpu-quota"}}},
		{name: "short 2 pods, part of the room left", objs: web(5, nil, running3()...), usedMiB: 20480,
			desired: 5, existing: 3, running: 2, missed: 2,
			short: []shortfall{{Family: "nvidia", Resource: "nvidia.com/gpumem", PerPod: 8192, Needed: 16384, Headroom: 4096, Short: 12288,
				Limit: 24576, Used: 20480, Quota: "gpu-quota"}}},
		{name: "missing pods that fit", objs: web(4, nil, running3()...), usedMiB: 8192, desired: 4, existing: 3, running: 2, missed: 1},
		{name: "whole", objs: web(3, nil, running3()...), usedMiB: 24576, desired: 3, existing: 3, running: 2},
		{name: "an annotation gang waiting", objs: web(4, map[string]string{"gpuadmit.io/gang": "train"}, running3()...), set: holding, usedMiB: 24576,
			desired: 4, existing: 3, running: 2, missed: 1,
			short: []shortfall{{Family: "nvidia", Resource: "nvidia.com/gpumem", PerPod: 8192, Needed: 8192, Short: 8192, Limit: 24576, Used: 24576, Quota: "gpu-quota"}},
			gang:  &gang{Kind: "Annotation", Name: "train", Waiting: true, MinCount: 4, Slots: 2, Admitted: 2}},
		{name: "a PodGroup of the same name: another gang, its hold released", objs: web(3, nil, running3()...), podGroup: "train", set: holding,
			usedMiB: 24576, desired: 3, existing: 3, running: 2, gang: &gang{Kind: "PodGroup", Name: "train", MinCount: 4, Admitted: 2, Ended: "Released"}},
		{name: "a gang with no hold", objs: web(3, map[string]string{"gpuadmit.io/gang": "eval"}, running3()...), set: holding,
			usedMiB: 24576, desired: 3, existing: 3, running: 2, gang: &gang{Kind: "Annotation", Name: "eval"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.podGroup != "" {
				d := tt.objs[0].(*appsv1.Deployment)
				d.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(tt.podGroup)}
			}
			kc := kubefake.NewClientset(tt.objs...)
			var dobjs []runtime.Object
			if tt.set != nil {
				dobjs = append(dobjs, tt.set)
			}
			dc := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), dobjs...)
			r, err := explain(t.Context(), kc, dc, ns, "Deployment", "web", usage(tt.usedMiB), []effective.Family{effective.Nvidia()})
			if err != nil {
				t.Fatal(err)
			}
			if r.Desired != tt.desired || r.Existing != tt.existing || r.Running != tt.running || r.Missing != tt.missed {
				t.Errorf("pods desired %d existing %d running %d missing %d, want %d %d %d %d",
					r.Desired, r.Existing, r.Running, r.Missing, tt.desired, tt.existing, tt.running, tt.missed)
			}
			if r.Demand != (effective.Vector{GPU: 1, MemMiB: 8192}) {
				t.Errorf("demand %+v", r.Demand)
			}
			if got := lastOf(r.LastDenial); got != tt.last {
				t.Errorf("last denial %q, want %q", got, tt.last)
			}
			if len(r.Short) != len(tt.short) || len(tt.short) > 0 && r.Short[0] != tt.short[0] {
				t.Errorf("short %+v\nwant %+v", r.Short, tt.short)
			}
			if r.Gang != nil {
				r.Gang.HeldSince = nil
			}
			if (r.Gang == nil) != (tt.gang == nil) || r.Gang != nil && *r.Gang != *tt.gang {
				t.Errorf("gang %+v, want %+v", r.Gang, tt.gang)
			}
		})
	}
}

func lastOf(d *denial) string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf("%s %s %d %s", d.Reason, d.On, d.Count, d.Message)
}

// TestExplainJobs: a Job wants its parallelism, at most the completions
// it lacks, none once finished; a CronJob wants what its active Jobs want.
func TestExplainJobs(t *testing.T) {
	job := func(name string, uid types.UID, parallelism, completions, succeeded int32, done bool) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
			Spec:   batchv1.JobSpec{Parallelism: ptr.To(parallelism), Completions: ptr.To(completions), Template: template(8192, nil)},
			Status: batchv1.JobStatus{Succeeded: succeeded}}
		if done {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}
		return j
	}
	cron := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec:   batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template(8192, nil)}}},
		Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "nightly-1"}, {Name: "nightly-gone"}}}}
	kc := kubefake.NewClientset(job("train", "j1", 8, 8, 6, false), job("done", "j2", 4, 4, 4, true),
		job("nightly-1", "j3", 3, 10, 0, false), cron)
	for kind, cases := range map[string]map[string]int32{"Job": {"train": 2, "done": 0}, "CronJob": {"nightly": 3}} {
		for name, want := range cases {
			r, err := explain(t.Context(), kc, nil, ns, kind, name, usage(0), []effective.Family{effective.Nvidia()})
			if err != nil {
				t.Fatal(err)
			}
			if r.Desired != want || r.Missing != want {
				t.Errorf("%s/%s: desired %d missing %d, want %d", kind, name, r.Desired, r.Missing, want)
			}
		}
	}
}

// TestPrintReport: the table names the pods, the last denial, what to
// free or raise under which quota, and the gang.
func TestPrintReport(t *testing.T) {
	r := report{Kind: "Deployment", Namespace: ns, Name: "web", Desired: 4, Existing: 3, Running: 3, Missing: 1,
		Demand:     effective.Vector{GPU: 1, MemMiB: 8192},
		LastDenial: &denial{Time: metav1.NewTime(t0), On: "Deployment/web", Reason: "GPUQuotaExceeded", Message: "pod x denied", Count: 2},
		Short: []shortfall{{Family: "nvidia", Resource: "nvidia.com/gpumem", PerPod: 8192, Needed: 8192, Short: 8192, Limit: 24576,
			Used: 24576, Quota: "gpu-quota"}}}
	var b bytes.Buffer
	if err := printReport(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"WORKLOAD         DESIRED   EXISTING   RUNNING   MISSING   DEMAND/POD",
		"Deployment/web   4         3          3         1         gpu=1 gpumem=8192MiB gpucores=0",
		"Last denial: 2026-12-06T12:00:00Z, GPUQuotaExceeded on Deployment/web (2 recorded): pod x denied",
		"Short: 1 pod(s); to admit them, free or raise:",
		"nvidia.com/gpumem   8192     0          8192    gpu-quota   24576   24576   0",
		"Gang: no gang",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	r.Gang = &gang{Kind: "Annotation", Name: "train", Waiting: true, MinCount: 4, Slots: 2, Admitted: 2, HeldSince: &metav1.Time{Time: t0}}
	if err := printReport(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := "Gang: Annotation train waiting: 2 of 4 admitted, room held for 2 more since 2026-12-06T12:00:00Z"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

// TestExplainEventsForbidden: a user who may not list the namespace's
// Events still gets the report, with a note saying the last denial is not
// known, not an error.
func TestExplainEventsForbidden(t *testing.T) {
	kc := kubefake.NewClientset(web(4, nil, running3()...)...)
	kc.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("events"), "", errors.New("alice may not list events"))
	})
	r, err := explain(t.Context(), kc, nil, ns, "Deployment", "web", usage(24576), []effective.Family{effective.Nvidia()})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastDenial != nil || r.Missing != 1 || len(r.Short) != 1 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "the last denial is not known") {
		t.Errorf("report %+v", r)
	}
}
