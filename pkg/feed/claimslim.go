package feed

import (
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
)

// ResourceClaims and ResourceClaimTemplates are objects any tenant creates
// in any number, of any DeviceClass, without a gpuadmit webhook seeing one
// that asks for no governed class: each may carry up to the API server's
// object size (~1.5 MB of selectors, opaque configuration, annotations,
// managed fields). Held whole, a few hundred of them exhaust a replica's
// memory, and every replica at once, again at every relist. So the feed
// keeps of them only what the charger reads, and only for governed classes:
//
//	claim or template of no governed class ──▶ identity: name, namespace, UID, resourceVersion (a deletion is seen, the ledger drops it)
//	claim or template of a governed class ───▶ identity; of its requests the names, and of each exactly/subrequest
//	                                           of a governed class the class, allocation mode, count, admin access,
//	                                           selectors and the capacity requests its class reads (of one of
//	                                           another class the name alone); a claim also its controller owner,
//	                                           its pod-claim-name annotation and its allocation's results and
//	                                           node selector
//
// Nothing of the spec's constraints or configuration, tolerations, the
// template's claim metadata, managed fields, labels, other annotations, the
// reserved-for list or device statuses is kept: the charger reads none of
// them (claimslim_prop_test.go checks that the demand of the slimmed claim
// is the demand of the claim, for random claims). What a governed claim may
// make a replica hold is bounded too: its selectors are kept up to
// dra.MaxClaimSelectorBytes; a claim over it keeps instead one marker
// (dra.OverCapSelectors) that makes the charger read it as it reads the
// whole claim: invalid, never charged as if it had no selectors (that
// would be every device of its class eligible, which may be less than the
// family's largest device the selectors' none-sized pick is charged).

const (
	// podClaimNameMax is the longest pod-claim-name annotation kept: the
	// claim controller writes a pod's name for the claim, a DNS label. A
	// longer one is no controller's, and a claim without it is decided as
	// any claim.
	podClaimNameMax = validation.DNS1123LabelMaxLength
)

// PodClaimNameAnnotation is the annotation the claim controller puts on a
// claim it generates: the pod's name for the claim (spec.resourceClaims[].name).
// gpuadmit reads it for nothing but a claim's identity.
const PodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name"

// claimSlimmer slims claims and templates for a charger's classes.
type claimSlimmer struct {
	charger *dra.Charger
	classes map[string]dra.Class
	// capacityNames are the capacity names any class reads (memory,
	// cores).
	capacityNames map[string]struct{}
}

func newClaimSlimmer(c *dra.Charger) *claimSlimmer {
	s := &claimSlimmer{charger: c, classes: map[string]dra.Class{}, capacityNames: map[string]struct{}{}}
	for _, cl := range c.Classes() {
		s.classes[cl.Name] = cl
		for _, name := range []string{cl.MemoryCapacity, cl.CoresCapacity} {
			if name != "" {
				s.capacityNames[name] = struct{}{}
			}
		}
	}
	return s
}

// claim slims a ResourceClaim (a new object; it may share read-only parts
// with c). Idempotent.
func (s *claimSlimmer) claim(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaim {
	meta := podwire.Identity(&c.ObjectMeta, false)
	if !s.charger.Governs(&c.Spec) {
		return &resourcev1.ResourceClaim{ObjectMeta: meta}
	}
	if v, ok := c.Annotations[PodClaimNameAnnotation]; ok && len(v) <= podClaimNameMax {
		meta.Annotations = map[string]string{PodClaimNameAnnotation: v}
	}
	meta.OwnerReferences = controllerRef(c.OwnerReferences)
	out := &resourcev1.ResourceClaim{ObjectMeta: meta, Spec: s.spec(&c.Spec)}
	if a := c.Status.Allocation; a != nil {
		out.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: s.results(a.Devices.Results)},
			NodeSelector: a.NodeSelector, AllocationTimestamp: a.AllocationTimestamp}
	}
	return out
}

// results are an allocation's results (written by the scheduler, one per
// device, at most 32) without the tolerations each copies from the claim,
// and of the capacity each consumed only the names a class reads (plain,
// or qualified with the result's driver); the allocation's configuration,
// the claim's and its class's, copied, is not kept either.
func (s *claimSlimmer) results(rs []resourcev1.DeviceRequestAllocationResult) []resourcev1.DeviceRequestAllocationResult {
	if rs == nil {
		return nil
	}
	out := make([]resourcev1.DeviceRequestAllocationResult, len(rs))
	for i := range rs {
		r := &out[i]
		*r = rs[i]
		r.Tolerations = nil
		if rs[i].ConsumedCapacity == nil {
			continue
		}
		r.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{}
		for k, q := range rs[i].ConsumedCapacity {
			name, _ := strings.CutPrefix(string(k), r.Driver+"/")
			if _, read := s.capacityNames[name]; read {
				r.ConsumedCapacity[k] = q
			}
		}
	}
	return out
}

// template slims a ResourceClaimTemplate. Idempotent.
func (s *claimSlimmer) template(t *resourcev1.ResourceClaimTemplate) *resourcev1.ResourceClaimTemplate {
	out := &resourcev1.ResourceClaimTemplate{ObjectMeta: podwire.Identity(&t.ObjectMeta, false)}
	if s.charger.Governs(&t.Spec.Spec) {
		out.Spec.Spec = s.spec(&t.Spec.Spec)
	}
	return out
}

// controllerRef is the controller among refs (the API server lets an object
// have one), nil when none is.
func controllerRef(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, o := range refs {
		if o.Controller != nil && *o.Controller {
			return []metav1.OwnerReference{o}
		}
	}
	return nil
}

// spec keeps of a governed claim's spec what the charger reads: of a
// request or subrequest of a class it does not govern only the name (and
// whether the request is exactly), of the others their fields the charger
// reads; over dra.MaxClaimSelectorBytes, instead of the selectors, the
// marker that makes the charger read the claim as over the cap.
func (s *claimSlimmer) spec(in *resourcev1.ResourceClaimSpec) resourcev1.ResourceClaimSpec {
	reqs := in.Devices.Requests
	var marker []resourcev1.DeviceSelector // the first governed ask's, when over the cap
	keep := true
	if n := s.charger.SelectorBytes(in); n > dra.MaxClaimSelectorBytes {
		keep, marker = false, dra.OverCapSelectors(n)
	}
	selectors := func(sel []resourcev1.DeviceSelector) []resourcev1.DeviceSelector {
		if keep {
			return sel
		}
		out := marker
		marker = nil
		return out
	}
	out := make([]resourcev1.DeviceRequest, len(reqs))
	for i := range reqs {
		r, o := &reqs[i], &out[i]
		o.Name = r.Name
		if e := r.Exactly; e != nil {
			o.Exactly = &resourcev1.ExactDeviceRequest{}
			if capacity, ok := s.governedCapacity(e.DeviceClassName, e.Capacity); ok {
				o.Exactly = &resourcev1.ExactDeviceRequest{DeviceClassName: e.DeviceClassName, AllocationMode: e.AllocationMode,
					Count: e.Count, AdminAccess: e.AdminAccess, Selectors: selectors(e.Selectors), Capacity: capacity}
			}
		}
		if r.FirstAvailable != nil {
			o.FirstAvailable = make([]resourcev1.DeviceSubRequest, len(r.FirstAvailable))
		}
		for j := range r.FirstAvailable {
			sub := &r.FirstAvailable[j]
			o.FirstAvailable[j] = resourcev1.DeviceSubRequest{Name: sub.Name}
			if capacity, ok := s.governedCapacity(sub.DeviceClassName, sub.Capacity); ok {
				o.FirstAvailable[j] = resourcev1.DeviceSubRequest{Name: sub.Name, DeviceClassName: sub.DeviceClassName,
					AllocationMode: sub.AllocationMode, Count: sub.Count, Selectors: selectors(sub.Selectors), Capacity: capacity}
			}
		}
	}
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: out}}
}

// governedCapacity is, for a request or subrequest of a class the charger
// governs (false for another), the capacity requests the charger reads of
// it: of capacity.requests the class's memory and cores names, plain or
// qualified with its driver.
func (s *claimSlimmer) governedCapacity(class string, capacity *resourcev1.CapacityRequirements) (*resourcev1.CapacityRequirements, bool) {
	cl, ok := s.classes[class]
	if !ok {
		return nil, false
	}
	if capacity == nil {
		return nil, true
	}
	out := &resourcev1.CapacityRequirements{}
	for _, name := range []string{cl.MemoryCapacity, cl.CoresCapacity} {
		if name == "" {
			continue
		}
		keys := []resourcev1.QualifiedName{resourcev1.QualifiedName(name)}
		if cl.Driver != "" {
			keys = append(keys, resourcev1.QualifiedName(cl.Driver+"/"+name))
		}
		for _, k := range keys {
			if q, ok := capacity.Requests[k]; ok {
				if out.Requests == nil {
					out.Requests = map[resourcev1.QualifiedName]resource.Quantity{}
				}
				out.Requests[k] = q
			}
		}
	}
	return out, true
}
