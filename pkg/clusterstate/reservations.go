package clusterstate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// GPUReservationSets is the resource of the GPUReservationSet objects.
func GPUReservationSets() schema.GroupVersionResource {
	return gpuadmitv1.GroupVersion().WithResource(gpuadmitv1.ReservationSetResource)
}

// Reservations reads the GPUReservationSet of namespace ns and returns the
// reservations a ledger built from pods listed at podsRV must count
// (reservation.Countable, the webhook's rule: those no replica recorded at or
// before podsRV; the ledger itself leaves out the ones whose pod it
// holds). None, without an error, when the namespace has no
// GPUReservationSet or its CRD is not installed.
func Reservations(ctx context.Context, c dynamic.Interface, ns, podsRV string) ([]reservation.Reservation, error) {
	obj, err := c.Resource(GPUReservationSets()).Namespace(ns).Get(ctx, gpuadmitv1.ObjectName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading GPUReservationSet %s/%s: %w", ns, gpuadmitv1.ObjectName, err)
	}
	var u gpuadmitv1.GPUReservationSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &u); err != nil {
		return nil, fmt.Errorf("GPUReservationSet %s/%s: %w", ns, gpuadmitv1.ObjectName, err)
	}
	if err := reservation.Validate(&u); err != nil {
		return nil, err
	}
	// Recorded before the pods were listed: the list holds the pod, or its deletion.
	return reservation.Countable(u.Status, podsRV), nil
}
