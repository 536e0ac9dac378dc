package feed

import (
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
	"github.com/gpuadmit/gpuadmit/pkg/quotacheck"
)

// The informers' transforms of the kinds other than pods and claims (pods:
// podwire.PodTransform; claims: claimfeed.go) and their handlers. Like the
// pods', they keep only what the ledger reads.

// NodeTransform slims Nodes to name, UID, resourceVersion, labels and the two
// device annotations (no status: images and conditions are large).
func NodeTransform(obj any) (any, error) {
	switch n := obj.(type) {
	case *corev1.Node:
		return &corev1.Node{ObjectMeta: podwire.Identity(&n.ObjectMeta, true, devices.NodeDevicesAnnotation, devices.HAMiNodeRegisterAnnotation)}, nil
	case toolscache.DeletedFinalStateUnknown:
		return n, nil
	}
	return nil, fmt.Errorf("node transform: unexpected object %T", obj)
}

// QuotaTransform slims ResourceQuotas to their identity, the spec.hard
// keys limits.<managed> and requests.<managed>, every limits. key of an
// extended resource (reported when no family governs it: quotacheck), and
// their scopes and scopeSelector.
func QuotaTransform(fams []effective.Family) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		switch q := obj.(type) {
		case *corev1.ResourceQuota:
			out := &corev1.ResourceQuota{ObjectMeta: podwire.Identity(&q.ObjectMeta, false)}
			out.Spec.Scopes, out.Spec.ScopeSelector = q.Spec.Scopes, q.Spec.ScopeSelector // scope.go
			for name, v := range q.Spec.Hard {
				if quotacheck.Kept(name, fams) {
					if out.Spec.Hard == nil {
						out.Spec.Hard = corev1.ResourceList{}
					}
					out.Spec.Hard[name] = v
				}
			}
			return out, nil
		case toolscache.DeletedFinalStateUnknown:
			return q, nil
		}
		return nil, fmt.Errorf("quota transform: unexpected object %T", obj)
	}
}

// NamespaceTransform slims Namespaces to their name, resourceVersion and
// labels.
func NamespaceTransform(obj any) (any, error) {
	switch n := obj.(type) {
	case *corev1.Namespace:
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels}}, nil
	case toolscache.DeletedFinalStateUnknown:
		return n, nil
	}
	return nil, fmt.Errorf("namespace transform: unexpected object %T", obj)
}

// NamespaceHandler applies Namespace events to sink (tombstones included).
func NamespaceHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("namespace", sink.UpsertNamespace, sink.DeleteNamespace, log)
}

// DeviceClassTransform slims DeviceClasses to their identity and
// selectors.
func DeviceClassTransform(obj any) (any, error) {
	switch c := obj.(type) {
	case *resourcev1.DeviceClass:
		return &resourcev1.DeviceClass{ObjectMeta: podwire.Identity(&c.ObjectMeta, false),
			Spec: resourcev1.DeviceClassSpec{Selectors: c.Spec.Selectors}}, nil
	case toolscache.DeletedFinalStateUnknown:
		return c, nil
	}
	return nil, fmt.Errorf("deviceclass transform: unexpected object %T", obj)
}

// DeviceClassHandler applies DeviceClass events to sink (tombstones
// included).
func DeviceClassHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("deviceclass", sink.UpsertDeviceClass, sink.DeleteDeviceClass, log)
}
