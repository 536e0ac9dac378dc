package why

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	gangs "github.com/gpuadmit/gpuadmit/pkg/gang"
)

// gang is the gang a workload's pods are in (the template's PodGroup, or
// its gpuadmit.io/gang annotation) and the hold the namespace's
// GPUReservationSet has for it (status.gangs): Waiting when its first pods
// were admitted and it holds room for Slots more, which have not come yet.
type gang struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Waiting bool   `json:"waiting"`
	// The hold's, when there is one.
	MinCount  int32        `json:"minCount,omitempty"`
	Slots     int32        `json:"slots,omitempty"`
	Admitted  int          `json:"admitted,omitempty"`
	HeldSince *metav1.Time `json:"heldSince,omitempty"`
	Ended     string       `json:"ended,omitempty"`
}

// gangOf is w's gang (nil when its template names none), its hold read
// through dc; what cannot be read is added to notes.
func gangOf(ctx context.Context, dc dynamic.Interface, w *workload, notes []string) (*gang, []string) {
	g := &gang{Kind: gpuadmitv1.GangOptIn, Name: w.Template.Annotations[gangs.NameAnnotation]}
	if sg := w.Template.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		g.Kind, g.Name = gpuadmitv1.GangPodGroup, *sg.PodGroupName
	}
	if g.Name == "" {
		return nil, notes
	}
	if dc == nil {
		return g, notes
	}
	obj, err := dc.Resource(gpuadmitv1.GroupVersion().WithResource(gpuadmitv1.ReservationSetResource)).Namespace(w.Namespace).Get(ctx, gpuadmitv1.ObjectName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return g, notes
	case err != nil:
		return g, append(notes, fmt.Sprintf("the gang's hold is not known: reading the GPUReservationSet: %v", err))
	}
	var set gpuadmitv1.GPUReservationSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &set); err != nil {
		return g, append(notes, fmt.Sprintf("the gang's hold is not known: the GPUReservationSet: %v", err))
	}
	for i := range set.Status.Gangs {
		if h := &set.Status.Gangs[i]; h.Kind == g.Kind && h.Name == g.Name {
			g.MinCount, g.Slots, g.Admitted, g.Ended = h.MinCount, h.Slots, len(h.Pods), h.Ended
			g.HeldSince = h.HeldSince.DeepCopy()
			g.Waiting = h.Ended == "" && h.Slots > 0
		}
	}
	return g, notes
}
