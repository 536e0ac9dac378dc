package why

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// kinds are the workload kinds `why` reads, by every name it takes
// (kubectl's names, plural and short names).
var kinds = map[string]string{
	"deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
	"replicaset": "ReplicaSet", "replicasets": "ReplicaSet", "rs": "ReplicaSet",
	"statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
	"job": "Job", "jobs": "Job",
	"cronjob": "CronJob", "cronjobs": "CronJob", "cj": "CronJob",
}

// parseTarget reads KIND/NAME (or KIND NAME), the kind as kubectl takes it
// (with or without its group: deployment.apps).
func parseTarget(args []string) (kind, name string, err error) {
	var k string
	switch len(args) {
	case 1:
		var ok bool
		if k, name, ok = strings.Cut(args[0], "/"); !ok {
			return "", "", cmdline.UsageErrorf("%q: want KIND/NAME, e.g. deployment/web", args[0])
		}
	case 2:
		k, name = args[0], args[1]
	default:
		return "", "", cmdline.UsageErrorf("want one workload, KIND/NAME (deployment, replicaset, statefulset, job, cronjob)")
	}
	k, _, _ = strings.Cut(strings.ToLower(k), ".")
	if kind = kinds[k]; kind == "" {
		return "", "", cmdline.UsageErrorf("%q is not a workload kind why reads: deployment, replicaset, statefulset, job or cronjob", k)
	}
	if name == "" {
		return "", "", cmdline.UsageErrorf("%s: the name is missing", args[0])
	}
	return kind, name, nil
}

// workload is what `why` reads of a workload: how many pods it wants,
// the template they are made from, and the objects that own them (a
// Deployment's ReplicaSets, a CronJob's active Jobs, else itself).
type workload struct {
	Kind, Name, Namespace string
	Desired               int32
	Template              corev1.PodTemplateSpec
	// owners are the UIDs the pods' controller references name, with the
	// object's kind/name.
	owners map[types.UID]string
}

// readWorkload reads kind/name in ns and the objects that own its pods.
func readWorkload(ctx context.Context, kc kubernetes.Interface, ns, kind, name string) (*workload, error) {
	w := &workload{Kind: kind, Name: name, Namespace: ns, owners: map[types.UID]string{}}
	var err error
	switch kind {
	case "Deployment":
		err = w.deployment(ctx, kc)
	case "ReplicaSet":
		var rs *appsv1.ReplicaSet
		if rs, err = kc.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			w.Desired, w.Template, w.owners[rs.UID] = replicas(rs.Spec.Replicas), rs.Spec.Template, "ReplicaSet/"+rs.Name
		}
	case "StatefulSet":
		var sts *appsv1.StatefulSet
		if sts, err = kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			w.Desired, w.Template, w.owners[sts.UID] = replicas(sts.Spec.Replicas), sts.Spec.Template, "StatefulSet/"+sts.Name
		}
	case "Job":
		var job *batchv1.Job
		if job, err = kc.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			w.Desired, w.Template, w.owners[job.UID] = jobWants(job), job.Spec.Template, "Job/"+job.Name
		}
	default:
		err = w.cronJob(ctx, kc)
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s %q not found in namespace %s", strings.ToLower(kind), name, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", strings.ToLower(kind), ns, name, err)
	}
	return w, nil
}

// deployment reads a Deployment and the ReplicaSets it controls.
func (w *workload) deployment(ctx context.Context, kc kubernetes.Interface) error {
	d, err := kc.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	w.Desired, w.Template = replicas(d.Spec.Replicas), d.Spec.Template
	list, err := kc.AppsV1().ReplicaSets(w.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the ReplicaSets: %w", err)
	}
	for i := range list.Items {
		if c := metav1.GetControllerOfNoCopy(&list.Items[i]); c != nil && c.UID == d.UID {
			w.owners[list.Items[i].UID] = "ReplicaSet/" + list.Items[i].Name
		}
	}
	return nil
}

// cronJob reads a CronJob and its active Jobs: it wants the pods they want.
func (w *workload) cronJob(ctx context.Context, kc kubernetes.Interface) error {
	cj, err := kc.BatchV1().CronJobs(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	w.Template = cj.Spec.JobTemplate.Spec.Template
	for _, ref := range cj.Status.Active {
		job, err := kc.BatchV1().Jobs(w.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading job %s: %w", ref.Name, err)
		}
		w.Desired += jobWants(job)
		w.owners[job.UID] = "Job/" + job.Name
	}
	return nil
}

// replicas is a replica count, 1 when unset (as the API defaults it).
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// jobWants is how many pods a Job wants running now: its parallelism,
// at most the completions it still lacks; none once it finished.
func jobWants(job *batchv1.Job) int32 {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return 0
		}
	}
	n := replicas(job.Spec.Parallelism)
	if job.Spec.Completions != nil {
		n = min(n, max(*job.Spec.Completions-job.Status.Succeeded, 0))
	}
	return n
}

// podCounts are the workload's pods: existing (not finished, not being
// deleted) and running.
type podCounts struct{ existing, running int32 }

// countPods counts the pods of ns whose controller is one of w's owners.
func countPods(ctx context.Context, kc kubernetes.Interface, w *workload) (podCounts, error) {
	var n podCounts
	if len(w.owners) == 0 {
		return n, nil
	}
	list, err := kc.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return n, fmt.Errorf("listing the pods of namespace %s: %w", w.Namespace, err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		c := metav1.GetControllerOfNoCopy(p)
		if c == nil || w.owners[c.UID] == "" || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n.existing++
		if p.Status.Phase == corev1.PodRunning {
			n.running++
		}
	}
	return n, nil
}
