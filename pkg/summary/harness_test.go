package summary

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func fakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), gpuadmitv1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&gpuadmitv1.GPUUsage{}, &gpuadmitv1.GPUReservationSet{}, &gpuadmitv1.GPUClusterQuota{}).
		WithObjects(objs...).Build()
}

// summaryOf reads ns's GPUUsage.
func summaryOf(t *testing.T, c client.Client, ns string) *gpuadmitv1.GPUUsage {
	t.Helper()
	u := &gpuadmitv1.GPUUsage{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// reservationSet reads ns's GPUReservationSet.
func reservationSet(t *testing.T, c client.Client, ns string) *gpuadmitv1.GPUReservationSet {
	t.Helper()
	u := &gpuadmitv1.GPUReservationSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func vec(g, m int64) effective.Usage {
	return effective.UsageOf("nvidia", effective.Vector{GPU: g, MemMiB: m})
}
