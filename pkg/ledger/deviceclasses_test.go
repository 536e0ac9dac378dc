package ledger

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// draSlice is a node-local slice of HAMi-DRA's driver publishing one device
// of memory in pool.
func draSlice(name, node, pool string, gen int64, memory string) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{Driver: hamiDRA, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0",
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}}}}}}
}

// TestDRAProblems: what the ledger reports of the DRA inputs it watches
// without charging them: a node publishing another node's pool, a device
// of implausible memory, and a DeviceClass outside the governed list that
// selects the governed driver's devices (a claim of it would hold them
// uncharged); a class of another driver is no problem, and a deleted one
// is forgotten.
func TestDRAProblems(t *testing.T) {
	l := newClaimLedger(t)
	l.UpsertSlice(draSlice("b", "node-b", "node-b", 1, "141Gi"))
	l.UpsertSlice(draSlice("a-forged", "node-a", "node-b", 2, "1Mi"))
	l.UpsertSlice(draSlice("c", "node-c", "node-c", 1, "1125899906842624Mi"))
	copyClass := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "copy"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + hamiDRA + `"`}}}}}
	other := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "fpga"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "example.com"`}}}}}
	l.UpsertDeviceClass(copyClass)
	l.UpsertDeviceClass(other)
	has := func(ps []Problem, kind ProblemKind, name, msg string) bool {
		for _, p := range ps {
			if p.Kind == kind && p.Name == name && strings.Contains(p.String(), msg) {
				return true
			}
		}
		return false
	}
	ps := l.Snapshot(nil).Problems
	for _, want := range []struct {
		kind      ProblemKind
		name, msg string
	}{
		{ProblemSlice, "a-forged", "publishes pool node-b, which node node-b publishes as its own"},
		{ProblemSlice, "c", "above the 1048576 MiB"},
		{ProblemDeviceClass, "copy", "is not governed and selects device " + hamiDRA + "/node-b/gpu-0"},
	} {
		if !has(ps, want.kind, want.name, want.msg) {
			t.Errorf("problems %v: none of kind %s for %s saying %q", ps, want.kind, want.name, want.msg)
		}
	}
	if has(ps, ProblemDeviceClass, "fpga", "") {
		t.Errorf("problems %v: a class of another driver reported", ps)
	}
	l.DeleteDeviceClass("copy")
	if ps := l.Snapshot(nil).Problems; has(ps, ProblemDeviceClass, "copy", "") {
		t.Errorf("problems %v: a deleted class still reported", ps)
	}
}
