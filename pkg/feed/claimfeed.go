package feed

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
)

// ClaimTransform slims ResourceClaims to what charger reads (claimslim.go):
// a claim of no governed class to its identity, a governed one to its
// identity, controller owner and pod-claim-name annotation (a generated
// claim's pod, pkg/ledger/templates.go), the request fields the charger reads and its
// allocation (no managed fields, no reserved-for list: a claim shared by
// many pods lists them all).
func ClaimTransform(charger *dra.Charger) toolscache.TransformFunc {
	s := newClaimSlimmer(charger)
	return func(obj any) (any, error) {
		switch c := obj.(type) {
		case *resourcev1.ResourceClaim:
			return s.claim(c), nil
		case toolscache.DeletedFinalStateUnknown:
			return c, nil
		}
		return nil, fmt.Errorf("resourceclaim transform: unexpected object %T", obj)
	}
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

// TemplateTransform slims ResourceClaimTemplates as ClaimTransform slims
// claims: identity, and for a governed class the request fields charger
// reads.
func TemplateTransform(charger *dra.Charger) toolscache.TransformFunc {
	s := newClaimSlimmer(charger)
	return func(obj any) (any, error) {
		switch t := obj.(type) {
		case *resourcev1.ResourceClaimTemplate:
			return s.template(t), nil
		case toolscache.DeletedFinalStateUnknown:
			return t, nil
		}
		return nil, fmt.Errorf("resourceclaimtemplate transform: unexpected object %T", obj)
	}
}

// ClaimHandler applies ResourceClaim events to sink (tombstones included).
func ClaimHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namespacedHandler("resourceclaim", sink.UpsertClaim, sink.DeleteClaim, log)
}

// TemplateHandler applies ResourceClaimTemplate events to sink (tombstones included).
func TemplateHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namespacedHandler("resourceclaimtemplate", sink.UpsertTemplate, sink.DeleteTemplate, log)
}

// namespacedHandler applies the events of a namespaced kind: adds and
// updates to upsert, deletions (tombstones included) to del by key.
func namespacedHandler[T any](what string, upsert func(T), del func(ns, name string), log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if o, ok := obj.(T); ok {
			upsert(o)
			return
		}
		log.Error(errUnexpected, what+" handler", "type", fmt.Sprintf("%T", obj))
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: func(obj any) {
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err == nil {
				var ns, name string
				if ns, name, err = toolscache.SplitMetaNamespaceKey(key); err == nil {
					del(ns, name)
					return
				}
			}
			log.Error(err, what+" delete: no key", "type", fmt.Sprintf("%T", obj))
		},
	}
}

// SliceHandler applies ResourceSlice events to sink (tombstones included).
func SliceHandler(sink Sink, log logr.Logger) toolscache.ResourceEventHandlerFuncs {
	return namedHandler("resourceslice", sink.UpsertSlice, sink.DeleteSlice, log)
}
