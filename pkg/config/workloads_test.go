package config_test

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

const podTmpl = `{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}`

// TestShippedWorkloadKinds: each shipped custom kind's pod sets and counts,
// read off an object written as its operator's users write it, counted as
// its controller counts them: a KubeRay worker group's replicas clamped to
// [minReplicas, maxReplicas] (maxReplicas winning when below), a JobSet
// job's parallelism bounded by its completions.
func TestShippedWorkloadKinds(t *testing.T) {
	kinds, err := config.WorkloadKinds(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		group, version, kind, spec string
		counts                     map[string]int64
	}{
		{"jobset.x-k8s.io", "v1alpha2", "JobSet", `{"replicatedJobs":[{"name":"w","replicas":2,"template":{"spec":{"parallelism":4,"template":` + podTmpl + `}}},
			{"name":"d","template":{"spec":{"template":` + podTmpl + `}}}]}`,
			map[string]int64{"spec.replicatedJobs[0].template.spec.template": 8, "spec.replicatedJobs[1].template.spec.template": 1}},
		{"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", `{"replicas":3,"leaderWorkerTemplate":{"size":4,"workerTemplate":` + podTmpl + `}}`,
			map[string]int64{"spec.leaderWorkerTemplate.workerTemplate (for spec.leaderWorkerTemplate.leaderTemplate)": 3, "spec.leaderWorkerTemplate.workerTemplate": 9}},
		{"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", `{"replicas":2,"leaderWorkerTemplate":{"size":4,"leaderTemplate":` + podTmpl + `,"workerTemplate":` + podTmpl + `}}`,
			map[string]int64{"spec.leaderWorkerTemplate.leaderTemplate": 2, "spec.leaderWorkerTemplate.workerTemplate": 6}},
		{"ray.io", "v1", "RayCluster", `{"headGroupSpec":{"template":` + podTmpl + `},"workerGroupSpecs":[{"replicas":5,"template":` + podTmpl + `},
			{"replicas":2,"numOfHosts":4,"template":` + podTmpl + `},{"template":` + podTmpl + `}]}`,
			map[string]int64{"spec.headGroupSpec.template": 1, "spec.workerGroupSpecs[0].template": 5, "spec.workerGroupSpecs[1].template": 8,
				"spec.workerGroupSpecs[2].template": 0}},
		{"ray.io", "v1", "RayJob", `{"rayClusterSpec":{"headGroupSpec":{"template":` + podTmpl + `},"workerGroupSpecs":[{"replicas":3,"template":` + podTmpl + `}]}}`,
			map[string]int64{"spec.rayClusterSpec.headGroupSpec.template": 1, "spec.rayClusterSpec.workerGroupSpecs[0].template": 3}},
		{"jobset.x-k8s.io", "v1alpha2", "JobSet", `{"replicatedJobs":[{"name":"w","replicas":3,"template":{"spec":{"parallelism":8,"completions":2,"template":` + podTmpl + `}}},
			{"name":"d","replicas":2,"template":{"spec":{"parallelism":2,"completions":5,"template":` + podTmpl + `}}}]}`,
			map[string]int64{"spec.replicatedJobs[0].template.spec.template": 6, "spec.replicatedJobs[1].template.spec.template": 4}},
		{"ray.io", "v1", "RayCluster", `{"headGroupSpec":{"template":` + podTmpl + `},"workerGroupSpecs":[
			{"replicas":0,"minReplicas":4,"maxReplicas":4,"template":` + podTmpl + `},
			{"minReplicas":2,"numOfHosts":4,"template":` + podTmpl + `},
			{"replicas":10,"minReplicas":1,"maxReplicas":6,"template":` + podTmpl + `},
			{"replicas":1,"minReplicas":5,"maxReplicas":3,"template":` + podTmpl + `},
			{"replicas":7,"minReplicas":5,"maxReplicas":3,"template":` + podTmpl + `},
			{"replicas":2,"minReplicas":1,"maxReplicas":8,"template":` + podTmpl + `},
			{"replicas":3,"maxReplicas":2147483647,"template":` + podTmpl + `}]}`,
			map[string]int64{"spec.headGroupSpec.template": 1, "spec.workerGroupSpecs[0].template": 4, "spec.workerGroupSpecs[1].template": 8,
				"spec.workerGroupSpecs[2].template": 6, "spec.workerGroupSpecs[3].template": 3, "spec.workerGroupSpecs[4].template": 3,
				"spec.workerGroupSpecs[5].template": 2, "spec.workerGroupSpecs[6].template": 3}},
		{"ray.io", "v1", "RayJob", `{"rayClusterSpec":{"headGroupSpec":{"template":` + podTmpl + `},"workerGroupSpecs":[
			{"replicas":0,"minReplicas":3,"numOfHosts":2,"template":` + podTmpl + `}]}}`,
			map[string]int64{"spec.rayClusterSpec.headGroupSpec.template": 1, "spec.rayClusterSpec.workerGroupSpecs[0].template": 6}},
		{"kubeflow.org", "v1", "PyTorchJob", `{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":` + podTmpl + `},"Worker":{"replicas":7,"template":` + podTmpl + `}}}`,
			map[string]int64{"spec.pytorchReplicaSpecs[Master].template": 1, "spec.pytorchReplicaSpecs[Worker].template": 7}},
		{"kubeflow.org", "v2beta1", "MPIJob", `{"mpiReplicaSpecs":{"Launcher":{"template":` + podTmpl + `},"Worker":{"replicas":4,"template":` + podTmpl + `}}}`,
			map[string]int64{"spec.mpiReplicaSpecs[Launcher].template": 1, "spec.mpiReplicaSpecs[Worker].template": 4}},
	} {
		k := kinds.Lookup(tt.group, tt.version, tt.kind)
		if k == nil {
			t.Errorf("%s/%s %s is not shipped", tt.group, tt.version, tt.kind)
			continue
		}
		obj, err := workload.Decode([]byte(`{"metadata":{"name":"x","namespace":"team-a"},"spec":` + tt.spec + `}`))
		if err != nil {
			t.Fatal(err)
		}
		sets, err := k.PodSets(obj)
		if err != nil {
			t.Errorf("%s: %v", tt.kind, err)
			continue
		}
		got := map[string]int64{}
		for _, s := range sets {
			got[s.Name] = s.Count
		}
		if len(got) != len(tt.counts) {
			t.Errorf("%s: pod sets %v, want %v", tt.kind, got, tt.counts)
		}
		for name, n := range tt.counts {
			if got[name] != n {
				t.Errorf("%s: %s has %d pods, want %d (all: %v)", tt.kind, name, got[name], n, got)
			}
		}
	}
}

// TestWorkloadsValidation: a bad entry is refused at load, naming the
// entry and the path; the good entry the cases start from is accepted.
func TestWorkloadsValidation(t *testing.T) {
	kind := func(mod func(*configv1alpha1.WorkloadKind)) func(*config.Configuration) {
		return func(c *config.Configuration) {
			k := configv1alpha1.WorkloadKind{Group: "example.com", Version: "v1", Kind: "Trainer", Resource: "trainers",
				Templates: []configv1alpha1.WorkloadTemplate{{Path: "spec.roles[*].template",
					Replicas: []configv1alpha1.WorkloadReplicas{{Path: "spec.roles[*].replicas", Default: ptr.To[int64](1)}}}}}
			mod(&k)
			c.Workloads.Kinds = []configv1alpha1.WorkloadKind{k}
		}
	}
	for _, tt := range []struct {
		name string
		mod  func(*config.Configuration)
		want string
	}{
		{"enforcement", func(c *config.Configuration) {
			c.Workloads.Enforcement = ptr.To[configv1alpha1.WorkloadEnforcement]("Block")
		}, "workloads.enforcement"},
		{"bad path", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Path = "spec..template" }), "workloads.kinds[0]: templates[0].path"},
		{"bracket", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Replicas[0].Path = "spec.roles[0].replicas" }), "templates[0].replicas[0].path"},
		{"other list", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Replicas[0].Path = "spec.other[*].n" }), "not over the template path's list"},
		{"no template", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates = nil }), "no template"},
		{"no kind", kind(func(k *configv1alpha1.WorkloadKind) { k.Kind = "" }), "workloads.kinds[0]"},
		{"negative default", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Replicas[0].Default = ptr.To[int64](-1) }), "negative default"},
		{"built-in", kind(func(k *configv1alpha1.WorkloadKind) { k.Group, k.Kind = "apps", "Deployment" }), "only its podCreator"},
		{"duplicate", func(c *config.Configuration) { c.Workloads.Kinds = append(c.Workloads.Kinds, c.Workloads.Kinds[0]) }, "listed twice"},
		{"scale path", kind(func(k *configv1alpha1.WorkloadKind) { k.ScaleReplicasPath = "spec.roles[*].replicas" }), "may not have [*]"},
		{"pod creator", kind(func(k *configv1alpha1.WorkloadKind) { k.PodCreator = &configv1alpha1.PodCreator{} }), "podCreator.username"},
		{"no resource", kind(func(k *configv1alpha1.WorkloadKind) { k.Resource = "" }), "workloads.kinds[0].resource: Required value"},
		{"resource not a DNS label", kind(func(k *configv1alpha1.WorkloadKind) { k.Resource = "Trainers" }), "workloads.kinds[0].resource: Invalid value"},
		{"resource with a dot", kind(func(k *configv1alpha1.WorkloadKind) { k.Resource = "trainers.example.com" }), "workloads.kinds[0].resource"},
		{"built-in with a resource", kind(func(k *configv1alpha1.WorkloadKind) {
			k.Group, k.Kind, k.Templates = "apps", "Deployment", nil
		}), "only its podCreator"},
		{"bad atLeast", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Replicas[0].AtLeast = "spec.roles[0].min" }), "templates[0].replicas[0].atLeast"},
		{"bad atMost", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Replicas[0].AtMost = "spec..max" }), "templates[0].replicas[0].atMost"},
		{"atLeast of another list", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Replicas[0].AtLeast = "spec.other[*].min" }), "not over the template path's list"},
		{"atMost of another list", kind(func(k *configv1alpha1.WorkloadKind) { k.Templates[0].Replicas[0].AtMost = "spec.other[*].max" }), "not over the template path's list"},
	} {
		c := config.Default()
		tt.mod(c)
		errs := config.Validate(c)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tt.want) {
			t.Errorf("%s: errors %v, want one naming %q", tt.name, errs, tt.want)
		}
	}
	good := config.Default()
	kind(func(k *configv1alpha1.WorkloadKind) {
		k.Templates[0].Replicas[0].AtLeast, k.Templates[0].Replicas[0].AtMost = "spec.roles[*].min", "spec.roles[*].max"
	})(good)
	if errs := config.Validate(good); len(errs) > 0 {
		t.Errorf("a valid custom kind is refused: %v", errs)
	}
}
