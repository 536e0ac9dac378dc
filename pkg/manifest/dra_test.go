package manifest_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// hamiClaim is a ResourceClaim as HAMi-DRA's webhook writes it: one device
// of its class with 8192 MiB (in bytes) and 30 cores.
const hamiClaim = `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train-gpu, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: hami-core-gpu.project-hami.io
        count: 1
        capacity: {requests: {memory: "8589934592", cores: 30}}
`

const draObjects = `apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: gpu-10g, namespace: team-a}
  spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: hami-core-gpu.project-hami.io, capacity: {requests: {memory: 10Gi}}}}]}}}
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: node1-hami}
  spec: {driver: hami-core-gpu.project-hami.io, nodeName: node1, pool: {name: node1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata: {name: hami-core-gpu.project-hami.io}
  spec: {selectors: [{cel: {expression: 'device.driver == "hami-core-gpu.project-hami.io"'}}]}
- apiVersion: resource.k8s.io/v1
  kind: DeviceTaintRule
  metadata: {name: t}
- apiVersion: example.com/v1
  kind: ResourceClaim
  metadata: {name: not-dra}
`

// TestReadDRA: the resource.k8s.io/v1 kinds are read into their lists, a
// claim is a workload too (in input order), other versions of those kinds
// are errors naming the apiVersion, other kinds are skipped.
func TestReadDRA(t *testing.T) {
	tests := []struct {
		name                                     string
		in                                       string
		claims, templates, slices, classes, pods int
		skipped                                  int
		workloads                                []string // kind/name
		wantErrSub                               string
	}{
		{name: "a HAMi-DRA claim is read and is a workload", in: hamiClaim, claims: 1, workloads: []string{"ResourceClaim/train-gpu"}},
		{name: "claim and pod in input order", in: podYAML + "---\n" + hamiClaim, claims: 1, pods: 1,
			workloads: []string{"Pod/p1", "ResourceClaim/train-gpu"}},
		{name: "templates, slices and classes are read, not evaluated; other kinds skipped", in: draObjects,
			templates: 1, slices: 1, classes: 1, skipped: 2},
		{name: "a ResourceClaimList", in: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimList","items":[` +
			`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"a"}},` +
			`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"b"}}]}`,
			claims: 2, workloads: []string{"ResourceClaim/a", "ResourceClaim/b"}},
		{name: "a v1beta2 claim names its apiVersion", in: strings.Replace(hamiClaim, "resource.k8s.io/v1", "resource.k8s.io/v1beta2", 1),
			wantErrSub: "document 1 (ResourceClaim team-a/train-gpu): apiVersion resource.k8s.io/v1beta2 is not read: gpuadmit reads the ResourceClaim of resource.k8s.io/v1 only (kubectl get resourceclaims.v1.resource.k8s.io -o yaml writes that version)"},
		{name: "a v1beta1 slice too", in: "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceSlice\nmetadata: {name: s}\n",
			wantErrSub: "apiVersion resource.k8s.io/v1beta1 is not read: gpuadmit reads the ResourceSlice of resource.k8s.io/v1 only (kubectl get resourceslices.v1.resource.k8s.io"},
		{name: "a v1alpha3 device class too", in: "apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceClass\nmetadata: {name: c}\n",
			wantErrSub: "gpuadmit reads the DeviceClass of resource.k8s.io/v1 only (kubectl get deviceclasses.v1.resource.k8s.io"},
		{name: "a bad capacity names request and capacity", in: strings.Replace(hamiClaim, `"8589934592"`, `"8 GiB"`, 1),
			wantErrSub: `document 1 (ResourceClaim team-a/train-gpu): request "gpu": capacity.requests["memory"] "8 GiB": not a quantity`},
		{name: "a bad capacity of a template's subrequest", in: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"t"},` +
			`"spec":{"spec":{"devices":{"requests":[{"name":"r","firstAvailable":[{"name":"big","capacity":{"requests":{"cores":"x"}}}]}]}}}}`,
			wantErrSub: `(ResourceClaimTemplate t): request "r/big": capacity.requests["cores"] "x": not a quantity`},
		{name: "a wrong field type", in: "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: 3}\n",
			wantErrSub: "document 1 (ResourceClaim c): json: cannot unmarshal number"},
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
			if len(objs.Claims) != tt.claims || len(objs.ClaimTemplates) != tt.templates || len(objs.Slices) != tt.slices ||
				len(objs.DeviceClasses) != tt.classes || len(objs.Pods) != tt.pods || objs.Skipped != tt.skipped {
				t.Fatalf("got %d claims, %d templates, %d slices, %d classes, %d pods, %d skipped", len(objs.Claims), len(objs.ClaimTemplates),
					len(objs.Slices), len(objs.DeviceClasses), len(objs.Pods), objs.Skipped)
			}
			var got []string
			for _, w := range objs.Workloads {
				got = append(got, w.Kind+"/"+w.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.workloads, ",") {
				t.Errorf("workloads %q, want %q", got, tt.workloads)
			}
		})
	}
}

// TestReadClaim: the claim is decoded whole, its workload names it, in its
// namespace, one of it, without a pod.
func TestReadClaim(t *testing.T) {
	objs, err := manifest.Read(strings.NewReader(hamiClaim))
	if err != nil {
		t.Fatal(err)
	}
	w := objs.Workloads[0]
	if w.Claim != objs.Claims[0] || w.Pod != nil || w.Namespace != "team-a" || w.Replicas != 1 {
		t.Fatalf("workload %+v", w)
	}
	e := w.Claim.Spec.Devices.Requests[0].Exactly
	mem, cores := e.Capacity.Requests["memory"], e.Capacity.Requests["cores"]
	if e.DeviceClassName != "hami-core-gpu.project-hami.io" || e.Count != 1 || mem.Value() != 8<<30 || cores.Value() != 30 {
		t.Errorf("request %+v", e)
	}
}

// TestReadFilesDRA: the DRA objects of several files are read together.
func TestReadFilesDRA(t *testing.T) {
	root := tree(t, map[string]string{"a.yaml": hamiClaim, "b.yaml": draObjects})
	objs, err := manifest.ReadFiles([]string{root}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Claims) != 1 || len(objs.ClaimTemplates) != 1 || len(objs.Slices) != 1 || len(objs.DeviceClasses) != 1 || len(objs.Workloads) != 1 {
		t.Errorf("got %d claims, %d templates, %d slices, %d classes, %d workloads", len(objs.Claims), len(objs.ClaimTemplates),
			len(objs.Slices), len(objs.DeviceClasses), len(objs.Workloads))
	}
}
