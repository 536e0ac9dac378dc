package decision

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Claims are decided like pods: the claim's demand (pkg/dra: the devices of
// the governed DeviceClasses it asks for, sized against the devices the
// ResourceSlices publish, else the largest device of the family) against
// the namespace's usage and reservations, by the same policies. The
// policies see the claim's identity in input.pod (its name, UID, labels and
// annotations: a claim has no containers, node selector or classes of a
// pod) and input.claim; its requests are input.demand's containers.

// GovernsClaim reports whether the claim asks for a device of a governed
// DeviceClass (any other claim is allowed on the fast path).
func (d *Decider) GovernsClaim(c *resourcev1.ResourceClaim) bool { return d.claims.Governs(&c.Spec) }

// Charger is the decider's claim charger.
func (d *Decider) Charger() *dra.Charger { return d.claims }

// ClaimDemand is the claim's demand as Decide computes it (ctx bounds the
// selectors' evaluation); an invalid request is an *effective.InvalidError.
func (d *Decider) ClaimDemand(ctx context.Context, c *resourcev1.ResourceClaim) (effective.Demands, error) {
	return d.claims.Demands(ctx, c.Name, &c.Spec, c.Status.Allocation, d.snap.Inventory(), d.claimOptions())
}

// claimSpecDemand is the demand of a claim spec not created yet (a template's).
func (d *Decider) claimSpecDemand(ctx context.Context, name string, spec *resourcev1.ResourceClaimSpec) (effective.Demands, error) {
	return d.claims.Demands(ctx, name, spec, nil, d.snap.Inventory(), d.claimOptions())
}

// claimOptions are the device sizes a claim's whole devices resolve
// against when no ResourceSlice sizes them: each family's largest device
// over every node (a claim is not bound to a node when it is admitted).
func (d *Decider) claimOptions() map[string]effective.Options {
	sizes := d.snap.Capacity().ResolveSizesFor(&corev1.Pod{}, d.families)
	opts := make(map[string]effective.Options, len(sizes))
	for f, size := range sizes {
		opts[f] = effective.Options{DeviceMemoryMiB: size}
	}
	return opts
}

// Requests reports whether the pod names a managed resource (a GPU pod):
// its containers', init containers' or native sidecars' requests of a
// family's resources, a ResourceClaimTemplate the ledger knows whose
// claim asks for a governed DeviceClass, or (resourceClaimName) a
// ResourceClaim the ledger charges: such a pod makes the claim burn the
// budgets while it runs, so it is reviewed (its quota demand stays its
// own: the claim is charged once, on its own). It is asked once, where a
// review or manifest is decoded, and handed down as
// Request.NoManagedResource.
func (d *Decider) Requests(pod *corev1.Pod) bool {
	return d.requestsOwn(pod) || len(d.namedClaims(pod)) > 0
}

// requestsOwn reports whether the pod's own demand (its containers' and
// its templates' claims') names a managed resource.
func (d *Decider) requestsOwn(pod *corev1.Pod) bool {
	return effective.RequestsAny(pod, d.families) || len(d.templates(pod)) > 0
}

// templated is one of a pod's claims from a template of a governed class.
type templated struct {
	name string // the pod's name for the claim
	tmpl *resourcev1.ResourceClaimTemplate
}

// templates are the pod's claims from ResourceClaimTemplates the ledger
// knows whose claims ask for a device of a governed class. A template not
// known yet adds nothing here: its claim is decided when the claim
// controller creates it.
func (d *Decider) templates(pod *corev1.Pod) []templated {
	var out []templated
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimTemplateName == nil {
			continue
		}
		if t := d.snap.Template(pod.Namespace, *rc.ResourceClaimTemplateName); t != nil && d.claims.Governs(&t.Spec.Spec) {
			out = append(out, templated{rc.Name, t})
		}
	}
	return out
}

// podDemand is the pod's demand, checked: its containers' (view: its
// eligible nodes) and the claims its known templates will produce, which
// hold their devices for the pod's whole life; and own, its containers'
// alone, which its admission reserves (each template's claim is decided
// and reserved at its own CREATE). Claims it names (resourceClaimName) are
// charged on their own, once, however many pods share them. The templates'
// selectors share one claim's CEL budget (dra.Charger.ShareBudget): a pod
// naming many templates gets no more CEL than one claim.
func (d *Decider) podDemand(ctx context.Context, pod *corev1.Pod, view *nodeView) (checked, own effective.Demands, err error) {
	own, err = effective.ComputeAll(pod, d.families, d.options(pod, view))
	if err != nil {
		return nil, nil, err
	}
	checked = own
	ctx = d.claims.ShareBudget(ctx) // one CEL budget for the review, not one per template
	for _, t := range d.templates(pod) {
		td, err := d.claimSpecDemand(ctx, pod.Name+"/"+t.name, &t.tmpl.Spec.Spec)
		if err != nil {
			return nil, nil, err
		}
		var ok bool
		if checked, ok = checked.With(td); !ok {
			return nil, nil, &effective.InvalidError{Errors: []*effective.FieldError{{Container: t.name, Resource: "resourceClaims",
				Reason: "the pod's and its claims' GPU requests do not fit in a 64-bit integer"}}}
		}
	}
	return checked, own, nil
}

// initOnlyClaims warns of the pod's claims only its regular init
// containers use: a claim holds its devices for the pod's whole life, and
// is charged so (an init container's extended resources are charged only
// until it finishes).
func initOnlyClaims(pod *corev1.Pod) []string {
	used := map[string]bool{}
	for i := range pod.Spec.Containers {
		for _, c := range pod.Spec.Containers[i].Resources.Claims {
			used[c.Name] = true
		}
	}
	for i := range pod.Spec.InitContainers {
		if ic := &pod.Spec.InitContainers[i]; effective.InitRole(ic) != effective.RoleInit {
			for _, c := range ic.Resources.Claims {
				used[c.Name] = true
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		for _, c := range pod.Spec.InitContainers[i].Resources.Claims {
			if !used[c.Name] && !seen[c.Name] {
				seen[c.Name] = true
				out = append(out, fmt.Sprintf("pod %q: ResourceClaim %q is used only by init containers, but a claim holds its devices for the pod's whole life and is charged so; give the devices as the init container's extended resources to have them charged only until it finishes", pod.Name, c.Name))
			}
		}
	}
	return out
}

// claimPod is the identity of a claim as input.pod shows it.
func claimPod(c *resourcev1.ResourceClaim) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: *c.ObjectMeta.DeepCopy()}
}
