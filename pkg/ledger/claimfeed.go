package ledger

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/go-logr/logr"
)

// ClaimTransform slims ResourceClaims to their identity, spec and
// allocation (no managed fields, no reserved-for list: a claim shared by
// many pods lists them all).
func ClaimTransform(obj any) (any, error) {
	switch c := obj.(type) {
	case *resourcev1.ResourceClaim:
		return &resourcev1.ResourceClaim{ObjectMeta: identity(&c.ObjectMeta, false), Spec: c.Spec,
			Status: resourcev1.ResourceClaimStatus{Allocation: c.Status.Allocation}}, nil
	case toolscache.DeletedFinalStateUnknown:
		return c, nil
	}
	return nil, fmt.Errorf("resourceclaim transform: unexpected object %T", obj)
}

// SliceTransform slims ResourceSlices to their name and spec.
func SliceTransform(obj any) (any, error) {
	switch s := obj.(type) {
	case *resourcev1.ResourceSlice:
		return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion},
			Spec: s.Spec}, nil
	case toolscache.DeletedFinalStateUnknown:
		return s, nil
	}
	return nil, fmt.Errorf("resourceslice transform: unexpected object %T", obj)
}

// ClaimHandler applies ResourceClaim events to sink (tombstones included).
func ClaimHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	upsert := func(obj any) {
		if c, ok := obj.(*resourcev1.ResourceClaim); ok {
			sink.UpsertClaim(c)
			return
		}
		log.Error(errUnexpected, "resourceclaim handler", "type", fmt.Sprintf("%T", obj))
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err == nil {
				var ns, name string
				if ns, name, err = toolscache.SplitMetaNamespaceKey(key); err == nil {
					sink.DeleteClaim(ns, name)
					return
				}
			}
			log.Error(err, "resourceclaim delete: no key", "type", fmt.Sprintf("%T", obj))
		},
	}
}

// SliceHandler applies ResourceSlice events to sink (tombstones included).
func SliceHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("resourceslice", sink.UpsertSlice, sink.DeleteSlice, log)
}
