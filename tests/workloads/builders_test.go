package workloads_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// gpuTemplate is a pod template labelled app=name whose one container asks
// one device with mem MiB (mem 0: one whole GPU, no memory asked).
func gpuTemplate(name string, mem int64) corev1.PodTemplateSpec {
	limits := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	if mem > 0 {
		limits["nvidia.com/gpumem"] = *resource.NewQuantity(mem, resource.DecimalSI)
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Limits: limits}}}}}
}

// deployment is a Deployment of replicas pods of one device with mem MiB.
func deployment(ns, name string, replicas int32, mem int64) *appsv1.Deployment {
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: gpuTemplate(name, mem)}}
}

// job is a Job running parallelism pods at once (completions the same) of
// one whole GPU each.
func job(ns, name string, parallelism int32) *batchv1.Job {
	t := gpuTemplate(name, 0)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       batchv1.JobSpec{Parallelism: ptr.To(parallelism), Completions: ptr.To(parallelism), Template: t}}
}

// cronJob is a CronJob every minute whose jobTemplate is job's.
func cronJob(ns, name string, parallelism int32) *batchv1.CronJob {
	j := job(ns, name, parallelism)
	return &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: j.Spec}}}
}

// manifest is obj as YAML for kubectl.
func manifest(t testing.TB, obj any) []byte {
	t.Helper()
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatalf("marshalling %T: %v", obj, err)
	}
	return data
}

// statefulSet is a StatefulSet of replicas pods of one device with mem
// MiB, started all at once (podManagementPolicy Parallel: no pod waits for
// the one before it to be ready, which no kubelet here makes).
func statefulSet(ns, name string, replicas int32, mem int64) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: gpuTemplate(name, mem)}}
}
