package manifest_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

const podYAML = `apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: a}
spec:
  containers:
  - name: c
    resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: "2048"}}
`

func TestRead(t *testing.T) {
	tests := []struct {
		name                 string
		in                   string
		pods, nodes, quotas  int
		skipped              int
		firstPod, wantErrSub string
	}{
		{name: "single YAML pod", in: podYAML, pods: 1, firstPod: "p1"},
		{name: "JSON pod", in: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c"}]}}`, pods: 1, firstPod: "j"},
		{name: "multi-document stream with empty documents", in: "---\n" + podYAML + "---\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
			pods: 1, nodes: 1, skipped: 1, firstPod: "p1"},
		{name: "kubectl List", in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ResourceQuota
  metadata: {name: q, namespace: a}
  spec: {hard: {limits.nvidia.com/gpumem: "24576"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p2, namespace: a}
  spec: {containers: [{name: c}]}
`, pods: 1, quotas: 1, firstPod: "p2"},
		{name: "PodList", in: `{"apiVersion":"v1","kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}},{"apiVersion":"v1","kind":"Pod","metadata":{"name":"y"}}]}`,
			pods: 2, firstPod: "x"},
		{name: "empty input", in: ""},
		{name: "bad quantity names container and resource", in: strings.Replace(podYAML, `"2048"`, `"lots"`, 1),
			wantErrSub: `document 1 (Pod a/p1): container "c": resources.limits["nvidia.com/gpumem"] "lots": not a quantity`},
		{name: "missing kind", in: "metadata: {name: x}\n", wantErrSub: `not a Kubernetes object (document 1): missing "kind"`},
		{name: "prose", in: "# Title\n\nSome text.\n", wantErrSub: `not a Kubernetes object (document 1): a text, not an object with apiVersion, kind and metadata`},
		{name: "a list", in: "- a\n- b\n", wantErrSub: `not a Kubernetes object (document 1): a list, not an object`},
		{name: "broken YAML", in: "apiVersion: v1\nkind: Pod\nmetadata: [\n", wantErrSub: "document 1: not valid YAML or JSON"},
		{name: "wrong field type", in: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n", wantErrSub: "document 1 (Pod p): json: cannot unmarshal number"},
		{name: "error in a list item", in: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}},{"metadata":{}}]}`,
			wantErrSub: `not a Kubernetes object (document 1, List item 1): missing "kind"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := manifest.Read(strings.NewReader(tt.in))
			if tt.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("error = %v, want %q", err, tt.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs.Pods) != tt.pods || len(objs.Nodes) != tt.nodes || len(objs.Quotas) != tt.quotas || objs.Skipped != tt.skipped {
				t.Fatalf("got %d pods, %d nodes, %d quotas, %d skipped", len(objs.Pods), len(objs.Nodes), len(objs.Quotas), objs.Skipped)
			}
			if tt.firstPod != "" && objs.Pods[0].Name != tt.firstPod {
				t.Errorf("first pod = %s", objs.Pods[0].Name)
			}
		})
	}
}

func TestReadQuantities(t *testing.T) {
	objs, err := manifest.Read(strings.NewReader(podYAML))
	if err != nil {
		t.Fatal(err)
	}
	q := objs.Pods[0].Spec.Containers[0].Resources.Limits["nvidia.com/gpumem"]
	if q.Value() != 2048 {
		t.Errorf("gpumem = %s", q.String())
	}
}

// TestReadWorkloads: Pods and the pod templates of workload controllers, in
// input order, with the number of pods each makes.
func TestReadWorkloads(t *testing.T) {
	tmpl := "template:\n    metadata: {labels: {app: x}}\n    spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: \"  1.0Ki \"}}}]}\n"
	in := podYAML + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: a}\nspec:\n  replicas: 4\n  " + tmpl +
		"---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  " + tmpl +
		"---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\nspec:\n  " + tmpl +
		"---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 3\n  " + tmpl +
		"---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: cj}\nspec:\n  jobTemplate:\n    spec:\n      parallelism: 2\n      " +
		strings.ReplaceAll(tmpl, "\n    ", "\n          ") +
		"---\napiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n  replicas: 0\n  " + tmpl
	objs, err := manifest.Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind, name string
		replicas   int64
	}{{"Pod", "p1", 1}, {"Deployment", "d", 4}, {"StatefulSet", "s", 1}, {"DaemonSet", "ds", manifest.PerNode},
		{"Job", "j", 3}, {"CronJob", "cj", 2}, {"ReplicaSet", "rs", 0}}
	if len(objs.Workloads) != len(want) || len(objs.Pods) != 1 {
		t.Fatalf("got %d workloads, %d pods", len(objs.Workloads), len(objs.Pods))
	}
	for i, w := range want {
		got := objs.Workloads[i]
		if got.Kind != w.kind || got.Name != w.name || got.Replicas != w.replicas || got.Pod.Name != w.name {
			t.Errorf("workload %d = %s %s x%d (pod %s), want %s %s x%d", i, got.Kind, got.Name, got.Replicas, got.Pod.Name, w.kind, w.name, w.replicas)
		}
	}
	d := objs.Workloads[1]
	if d.Pod.Namespace != "a" || d.Pod.Labels["app"] != "x" {
		t.Errorf("template pod %s/%s labels %v", d.Pod.Namespace, d.Pod.Name, d.Pod.Labels)
	}
	if v, ok := d.Written("c", "limits", "nvidia.com/gpumem"); !ok || v != "1.0Ki" {
		t.Errorf("written gpumem = %q, %v; want 1.0Ki", v, ok)
	}
	for _, bad := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {}\n",
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: -1, " + strings.TrimSuffix(strings.ReplaceAll(tmpl, "\n    ", " "), "\n") + "}\n",
	} {
		if _, err := manifest.Read(strings.NewReader(bad)); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}
