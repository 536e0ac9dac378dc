package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

// Service accounts of the controllers that create the shipped kinds' pods:
// a JobSet's Jobs make its pods (kube-controller-manager's job controller),
// a LeaderWorkerSet's StatefulSets make its pods; KubeRay's and Kubeflow's
// operators make theirs, in the namespaces their charts install to.
var (
	kuberayOperator  = podCreator("system:serviceaccount:ray-system:kuberay-operator", "ray-system")
	kubeflowOperator = podCreator("system:serviceaccount:kubeflow:training-operator", "kubeflow")
)

func podCreator(user, ns string) *configv1alpha1.PodCreator {
	return &configv1alpha1.PodCreator{Username: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
}

func kcm(controller string) *configv1alpha1.PodCreator {
	id := workload.ControllerIdentity(controller)
	return &configv1alpha1.PodCreator{Username: id.Username, Groups: id.Groups}
}

func counts(paths ...string) []configv1alpha1.WorkloadReplicas {
	out := make([]configv1alpha1.WorkloadReplicas, len(paths))
	for i, p := range paths {
		out[i] = configv1alpha1.WorkloadReplicas{Path: p}
	}
	return out
}

// DefaultWorkloadKinds are the custom kinds read when the configuration
// lists none: LeaderWorkerSet, JobSet, RayCluster, RayJob and Kubeflow's
// training jobs.
func DefaultWorkloadKinds() []configv1alpha1.WorkloadKind {
	kinds := []configv1alpha1.WorkloadKind{
		{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet", Resource: "leaderworkersets", PodCreator: kcm("statefulset-controller"),
			ScaleReplicasPath: "spec.replicas",
			Templates: []configv1alpha1.WorkloadTemplate{
				{Path: "spec.leaderWorkerTemplate.leaderTemplate", Fallback: "spec.leaderWorkerTemplate.workerTemplate", Replicas: counts("spec.replicas")},
				{Path: "spec.leaderWorkerTemplate.workerTemplate", Replicas: []configv1alpha1.WorkloadReplicas{{Path: "spec.replicas"},
					{Path: "spec.leaderWorkerTemplate.size", Offset: -1}}}}},
		{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet", Resource: "jobsets", PodCreator: kcm("job-controller"),
			Templates: []configv1alpha1.WorkloadTemplate{{Path: "spec.replicatedJobs[*].template.spec.template",
				Replicas: []configv1alpha1.WorkloadReplicas{{Path: "spec.replicatedJobs[*].replicas"},
					{Path: "spec.replicatedJobs[*].template.spec.parallelism", AtMost: "spec.replicatedJobs[*].template.spec.completions"}}}}},
		rayKind("RayCluster", "rayclusters", "spec."),
		rayKind("RayJob", "rayjobs", "spec.rayClusterSpec."),
	}
	// A RayJob's submitter Job is made from spec.submitterPodTemplate: it is
	// stamped (KubeRay copies its stamp) and its one pod counted.
	kinds[len(kinds)-1].Templates = append(kinds[len(kinds)-1].Templates, configv1alpha1.WorkloadTemplate{Path: "spec.submitterPodTemplate"})
	for _, k := range []struct{ kind, version, field string }{{"PyTorchJob", "v1", "pytorchReplicaSpecs"}, {"TFJob", "v1", "tfReplicaSpecs"},
		{"MPIJob", "v2beta1", "mpiReplicaSpecs"}, {"XGBoostJob", "v1", "xgbReplicaSpecs"}, {"PaddleJob", "v1", "paddleReplicaSpecs"},
		{"JAXJob", "v1", "jaxReplicaSpecs"}} {
		kinds = append(kinds, configv1alpha1.WorkloadKind{Group: "kubeflow.org", Version: k.version, Kind: k.kind,
			Resource: strings.ToLower(k.kind) + "s", PodCreator: kubeflowOperator,
			Templates: []configv1alpha1.WorkloadTemplate{{Path: "spec." + k.field + "[*].template", Replicas: counts("spec." + k.field + "[*].replicas")}}})
	}
	return kinds
}

// rayKind is a KubeRay kind whose cluster spec is at prefix: a head pod,
// and each worker group's replicas (default 0) clamped as KubeRay does
// (raised to minReplicas, then lowered to maxReplicas, which wins when
// below minReplicas; either absent: no bound) x numOfHosts (default 1).
func rayKind(kind, resource, prefix string) configv1alpha1.WorkloadKind {
	g := prefix + "workerGroupSpecs[*]."
	return configv1alpha1.WorkloadKind{Group: "ray.io", Version: "v1", Kind: kind, Resource: resource, PodCreator: kuberayOperator,
		Templates: []configv1alpha1.WorkloadTemplate{
			{Path: prefix + "headGroupSpec.template"},
			{Path: g + "template", Replicas: []configv1alpha1.WorkloadReplicas{
				{Path: g + "replicas", Default: ptr.To[int64](0), AtLeast: g + "minReplicas", AtMost: g + "maxReplicas"},
				{Path: prefix + "workerGroupSpecs[*].numOfHosts"}}}}}
}

// setDefaultsWorkloads sets the workloads section's defaults.
func setDefaultsWorkloads(c *Configuration) {
	w := orNew(c.Workloads)
	c.Workloads = w
	setDefault(&w.Enforcement, configv1alpha1.WorkloadEnforcementDeny)
	if w.Kinds == nil {
		w.Kinds = DefaultWorkloadKinds()
	}
	for i := range w.Kinds {
		for j := range w.Kinds[i].Templates {
			for r := range w.Kinds[i].Templates[j].Replicas {
				setDefault(&w.Kinds[i].Templates[j].Replicas[r].Default, 1)
			}
		}
	}
}

// WorkloadKinds are the kinds of a defaulted, valid configuration's
// workloads section, the built-in ones included.
func WorkloadKinds(c *Configuration) (*workload.Kinds, error) {
	var extra []workload.Kind
	if c.Workloads != nil {
		for i := range c.Workloads.Kinds {
			k, err := workloadKind(&c.Workloads.Kinds[i])
			if err != nil {
				return nil, fmt.Errorf("workloads.kinds[%d]: %w", i, err)
			}
			extra = append(extra, k)
		}
	}
	return workload.NewKinds(extra)
}

// workloadKind parses one entry's paths.
func workloadKind(e *configv1alpha1.WorkloadKind) (workload.Kind, error) {
	k := workload.Kind{Group: e.Group, Version: e.Version, Kind: e.Kind, Resource: e.Resource}
	if e.PodCreator != nil {
		k.PodCreator = workload.Identity{Username: e.PodCreator.Username, Groups: append([]string(nil), e.PodCreator.Groups...)}
	}
	var err error
	if e.ScaleReplicasPath != "" {
		if k.ScalePath, err = workload.ParsePath(e.ScaleReplicasPath); err != nil {
			return k, fmt.Errorf("scaleReplicasPath: %w", err)
		}
	}
	for j, t := range e.Templates {
		var wt workload.Template
		if wt.Path, err = workload.ParsePath(t.Path); err != nil {
			return k, fmt.Errorf("templates[%d].path: %w", j, err)
		}
		if t.Fallback != "" {
			if wt.Fallback, err = workload.ParsePath(t.Fallback); err != nil {
				return k, fmt.Errorf("templates[%d].fallback: %w", j, err)
			}
		}
		for r := range t.Replicas {
			f, err := factor(&t.Replicas[r])
			if err != nil {
				return k, fmt.Errorf("templates[%d].replicas[%d].%w", j, r, err)
			}
			wt.Replicas = append(wt.Replicas, f)
		}
		k.Templates = append(k.Templates, wt)
	}
	return k, nil
}

// factor parses one count of a template: its path and optional bounds
// (an error names the field: "path: ...").
func factor(rep *configv1alpha1.WorkloadReplicas) (workload.Factor, error) {
	f := workload.Factor{Default: ptr.Deref(rep.Default, 1), Offset: rep.Offset}
	var err error
	if f.Path, err = workload.ParsePath(rep.Path); err != nil {
		return f, fmt.Errorf("path: %w", err)
	}
	if rep.AtLeast != "" {
		if f.AtLeast, err = workload.ParsePath(rep.AtLeast); err != nil {
			return f, fmt.Errorf("atLeast: %w", err)
		}
	}
	if rep.AtMost != "" {
		if f.AtMost, err = workload.ParsePath(rep.AtMost); err != nil {
			return f, fmt.Errorf("atMost: %w", err)
		}
	}
	return f, nil
}

// validateWorkloads checks the workloads section: a known enforcement, each
// kind named, its paths parsed and read at their template's indexes.
func validateWorkloads(c *Configuration) field.ErrorList {
	w, p := c.Workloads, field.NewPath("workloads")
	if w == nil {
		return nil
	}
	var errs field.ErrorList
	if e := *w.Enforcement; e != configv1alpha1.WorkloadEnforcementDeny && e != configv1alpha1.WorkloadEnforcementWarn {
		errs = append(errs, field.NotSupported(p.Child("enforcement"), e, []configv1alpha1.WorkloadEnforcement{configv1alpha1.WorkloadEnforcementDeny, configv1alpha1.WorkloadEnforcementWarn}))
	}
	for i := range w.Kinds {
		e, kp := &w.Kinds[i], p.Child("kinds").Index(i)
		if e.Version == "" || e.Kind == "" {
			errs = append(errs, field.Required(kp, "version and kind are required"))
			continue
		}
		if e.PodCreator != nil && e.PodCreator.Username == "" {
			errs = append(errs, field.Required(kp.Child("podCreator", "username"), "a pod creator needs a username"))
		}
		if workload.IsBuiltin(e.Group, e.Kind) {
			if len(e.Templates) > 0 || e.ScaleReplicasPath != "" || e.Resource != "" {
				errs = append(errs, field.Invalid(kp, e.Group+"/"+e.Kind, "built in: only its podCreator may be configured"))
			}
			continue
		}
		errs = append(errs, validateResource(kp.Child("resource"), e.Resource)...)
	}
	if len(errs) == 0 {
		if _, err := WorkloadKinds(c); err != nil {
			errs = append(errs, field.Invalid(p.Child("kinds"), "", err.Error()))
		}
	}
	return errs
}

// validateResource checks a custom kind's plural resource name: required,
// a DNS label (what a CustomResourceDefinition's plural is).
func validateResource(p *field.Path, r string) field.ErrorList {
	if r == "" {
		return field.ErrorList{field.Required(p, "a custom kind needs its plural resource name (its CustomResourceDefinition's spec.names.plural)")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(r) {
		errs = append(errs, field.Invalid(p, r, msg))
	}
	return errs
}
