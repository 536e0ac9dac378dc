package local

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// Usage reads ns's GPUUsage from the API server (nil when there is none).
func (c *Cluster) Usage(ctx context.Context, ns string) (*gpuadmitv1.GPUUsage, error) {
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		return nil, err
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("a GPUUsage client: %w", err)
	}
	u := &gpuadmitv1.GPUUsage{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading GPUUsage %s/%s: %w", ns, gpuadmitv1.ObjectName, err)
	}
	return u, nil
}

// ReservationSet reads ns's GPUReservationSet (the reservations) from the
// API server (nil when there is none).
func (c *Cluster) ReservationSet(ctx context.Context, ns string) (*gpuadmitv1.GPUReservationSet, error) {
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		return nil, err
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("a GPUReservationSet client: %w", err)
	}
	u := &gpuadmitv1.GPUReservationSet{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading GPUReservationSet %s/%s: %w", ns, gpuadmitv1.ObjectName, err)
	}
	return u, nil
}
