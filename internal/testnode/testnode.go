package testnode

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// Annotated is a node with the given labels and annotations.
func Annotated(name string, labels, annotations map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-node-" + name),
		Labels: labels, Annotations: annotations}}
}

// WithDevices is a node announcing devs in gpuadmit.io/gpu-devices. It
// panics on a device the annotation cannot hold (a broken test fixture).
func WithDevices(name string, labels map[string]string, devs ...devices.Device) *corev1.Node {
	v, err := devices.EncodeNodeDevices(devs)
	if err != nil {
		panic(fmt.Sprintf("testnode %s: %v", name, err))
	}
	return Annotated(name, labels, map[string]string{devices.NodeDevicesAnnotation: v})
}

// WithGPUs is a node with one healthy device (100 cores) per memory size,
// the UUIDs GPU-<name>-<i>.
func WithGPUs(name string, labels map[string]string, memMiB ...int64) *corev1.Node {
	devs := make([]devices.Device, len(memMiB))
	for i, m := range memMiB {
		devs[i] = devices.Device{UUID: fmt.Sprintf("GPU-%s-%d", name, i), Index: i, MemoryMiB: m, Cores: 100, Healthy: true}
	}
	return WithDevices(name, labels, devs...)
}
