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
// read off an object written as its operator's users write it.
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
// entry and the path.
func TestWorkloadsValidation(t *testing.T) {
	kind := func(mod func(*configv1alpha1.WorkloadKind)) func(*config.Configuration) {
		return func(c *config.Configuration) {
			k := configv1alpha1.WorkloadKind{Group: "example.com", Version: "v1", Kind: "Trainer",
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
	} {
		c := config.Default()
		tt.mod(c)
		errs := config.Validate(c)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tt.want) {
			t.Errorf("%s: errors %v, want one naming %q", tt.name, errs, tt.want)
		}
	}
}
