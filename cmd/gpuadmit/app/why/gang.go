package why

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// gangAnnotation names a pod's gang where the PodGroup API is not served.
const gangAnnotation = "gpuadmit.io/gang"

var reservationSets = schema.GroupVersionResource{Group: gpuadmitv1.GroupVersion().Group, Version: gpuadmitv1.GroupVersion().Version,
	Resource: "gpureservationsets"}

// gang is the gang a workload's pods are in: its name (the template's
// PodGroup, or its gpuadmit.io/gang annotation), whether the namespace's
// GPUReservationSet holds room for it (an entry of status.gangs) and that
// entry as the GPUReservationSet writes it.
type gang struct {
	Name    string         `json:"name"`
	Holding bool           `json:"holding"`
	Hold    map[string]any `json:"hold,omitempty"`
}

// gangOf is w's gang (nil when its template names none), the
// GPUReservationSet read through dc; what cannot be read is added to notes.
func gangOf(ctx context.Context, dc dynamic.Interface, w *workload, notes []string) (*gang, []string) {
	name := w.Template.Annotations[gangAnnotation]
	if sg := w.Template.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		name = *sg.PodGroupName
	}
	if name == "" {
		return nil, notes
	}
	g := &gang{Name: name}
	if dc == nil {
		return g, notes
	}
	set, err := dc.Resource(reservationSets).Namespace(w.Namespace).Get(ctx, gpuadmitv1.ObjectName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return g, notes
	case err != nil:
		return g, append(notes, fmt.Sprintf("the gang's hold is not known: reading the GPUReservationSet: %v", err))
	}
	g.Hold = holdOf(set, name)
	g.Holding = g.Hold != nil
	return g, notes
}

// holdOf is the entry of set's status.gangs named name (by name or
// podGroup), nil when there is none: a GPUReservationSet of a release
// without gangs has no status.gangs.
func holdOf(set *unstructured.Unstructured, name string) map[string]any {
	gangs, _, _ := unstructured.NestedSlice(set.Object, "status", "gangs")
	for _, e := range gangs {
		m, ok := e.(map[string]any)
		if ok && (m["name"] == name || m["podGroup"] == name) {
			return m
		}
	}
	return nil
}
