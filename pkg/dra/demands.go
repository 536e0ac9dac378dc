package dra

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Demands is the claim's demand per family: one *effective.Demand per
// family the claim asks devices of, families in the Charger's family order.
// Each governed request is one container (named after the request, or
// "<request>/<subrequest>" for each subrequest of firstAvailable, all of
// role app); a Demand's Effective is the sum over the claim's requests of
// each request's demand, the per-dimension maximum over its subrequests.
// opts gives, per family name, the device size whole-device and percentage
// requests resolve against (as in effective.ComputeAll); alloc (nil when not
// allocated) pins the request to the devices the scheduler picked and inv
// sizes them. Invalid requests yield an *effective.InvalidError listing each
// one, its Container "<name>/<request>".
//
// Every CEL selector is evaluated under ctx (the review's deadline) and
// within the charger's per-claim cost budget: once either is spent, the
// devices not yet evaluated count as eligible (the worst case: the charge
// is never lower for it) and no more CEL runs for the claim. Under a
// context of ShareBudget the budget is the one the context carries, shared
// with every other Demands under it. A claim whose selectors count more
// than MaxClaimSelectorBytes (SelectorBytes) is invalid, none of its
// requests charged.
func (c *Charger) Demands(ctx context.Context, name string, spec *resourcev1.ResourceClaimSpec,
	alloc *resourcev1.AllocationResult, inv *Inventory, opts map[string]effective.Options) (effective.Demands, error) {
	if c == nil || spec == nil {
		return nil, nil
	}
	if ctx == nil {
		ctx = context.Background() // a nil context must not panic in CEL
	}
	b := &builder{c: c, claim: name, inv: inv, opts: opts, acc: make([]*effective.Demand, len(c.fams)),
		results: resultsByRequest(alloc), node: allocatedNode(alloc), seen: map[string]bool{},
		eval: evaluation{ctx: ctx, left: c.budget, limit: c.cel.limit}}
	if shared := budgetOf(ctx); shared != nil {
		b.eval.left = shared.take()
		defer func() { shared.give(b.eval.left) }()
	}
	if b.checkSelectorCap(spec) {
		for i := range spec.Devices.Requests {
			b.request(&spec.Devices.Requests[i])
		}
	}
	if len(b.errs) > 0 {
		return nil, &effective.InvalidError{Errors: b.errs}
	}
	var out effective.Demands
	for _, d := range b.acc {
		if d != nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// builder accumulates one claim's demand.
type builder struct {
	c       *Charger
	claim   string
	inv     *Inventory
	opts    map[string]effective.Options
	results map[string][]*resourcev1.DeviceRequestAllocationResult
	// node is the node the claim is allocated on ("" when none is named).
	node string
	eval evaluation
	seen map[string]bool
	// acc is the demand per family, by the family's index (nil: none yet).
	acc  []*effective.Demand
	errs []*effective.FieldError
}

// resultsByRequest indexes the allocated devices by request name
// ("<request>" or "<request>/<subrequest>").
func resultsByRequest(alloc *resourcev1.AllocationResult) map[string][]*resourcev1.DeviceRequestAllocationResult {
	if alloc == nil {
		return nil
	}
	out := map[string][]*resourcev1.DeviceRequestAllocationResult{}
	for i := range alloc.Devices.Results {
		r := &alloc.Devices.Results[i]
		out[r.Request] = append(out[r.Request], r)
	}
	return out
}

// allocatedNode is the node a node-local allocation is made on: the
// scheduler's node selector of one term matching metadata.name ("" for
// any other).
func allocatedNode(alloc *resourcev1.AllocationResult) string {
	if alloc == nil || alloc.NodeSelector == nil || len(alloc.NodeSelector.NodeSelectorTerms) != 1 {
		return ""
	}
	t := &alloc.NodeSelector.NodeSelectorTerms[0]
	if len(t.MatchExpressions) != 0 || len(t.MatchFields) != 1 {
		return ""
	}
	f := &t.MatchFields[0]
	if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn || len(f.Values) != 1 {
		return ""
	}
	return f.Values[0]
}

// fail records an invalid request.
func (b *builder) fail(request, res, value, reason string) {
	b.errs = append(b.errs, &effective.FieldError{Container: b.claim + "/" + request, Resource: res, Value: value, Reason: reason})
}

// charged is what one request charges one family.
type charged struct {
	vec        effective.Vector
	containers []effective.Container
}

// request charges one device request: its exactly, or the worst of its
// firstAvailable subrequests (only the picked one once allocated).
func (b *builder) request(r *resourcev1.DeviceRequest) {
	asks := b.asks(r)
	if len(asks) == 0 {
		return
	}
	switch {
	case b.seen[r.Name]:
		b.fail(r.Name, "name", r.Name, "the request name is used twice in the claim")
		return
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		b.fail(r.Name, asks[0].class.Name, "", "the request sets both exactly and firstAvailable")
		return
	}
	b.seen[r.Name] = true
	per := make([]*charged, len(b.c.fams))
	for _, a := range b.picked(r, asks) {
		ct, ok := b.charge(a)
		if !ok {
			continue
		}
		ch := per[a.famIdx]
		if ch == nil {
			ch = &charged{}
			per[a.famIdx] = ch
		}
		ch.vec = ch.vec.Max(ct.Total)
		ch.containers = append(ch.containers, ct)
	}
	for i, ch := range per {
		if ch != nil {
			b.add(i, r.Name, ch)
		}
	}
}

// asks are the request's exactly or subrequests of a governed class.
func (b *builder) asks(r *resourcev1.DeviceRequest) []*ask {
	var out []*ask
	if e := r.Exactly; e != nil {
		out = b.appendAsk(out, &ask{name: r.Name, className: e.DeviceClassName, selectors: e.Selectors,
			mode: e.AllocationMode, count: e.Count, capacity: e.Capacity})
	}
	for i := range r.FirstAvailable {
		s := &r.FirstAvailable[i]
		out = b.appendAsk(out, &ask{name: r.Name + "/" + s.Name, className: s.DeviceClassName, selectors: s.Selectors,
			mode: s.AllocationMode, count: s.Count, capacity: s.Capacity})
	}
	return out
}

// appendAsk appends a to out when its class is governed.
func (b *builder) appendAsk(out []*ask, a *ask) []*ask {
	a.class = b.c.class(a.className)
	if a.class == nil {
		return out
	}
	a.famIdx = b.c.famIdx[a.class.Family]
	a.fam = &b.c.fams[a.famIdx]
	return append(out, a)
}

// picked narrows a firstAvailable request that is allocated to the
// subrequests the scheduler picked (none governed: nothing is charged).
func (b *builder) picked(r *resourcev1.DeviceRequest, asks []*ask) []*ask {
	allocated := false
	for i := range r.FirstAvailable {
		if len(b.results[r.Name+"/"+r.FirstAvailable[i].Name]) > 0 {
			allocated = true
			break
		}
	}
	if !allocated {
		return asks
	}
	var out []*ask
	for _, a := range asks {
		if len(b.results[a.name]) > 0 {
			out = append(out, a)
		}
	}
	return out
}

// add adds one request's charge to its family's demand.
func (b *builder) add(famIdx int, request string, ch *charged) {
	d := b.acc[famIdx]
	if d == nil {
		d = &effective.Demand{Family: b.c.fams[famIdx].Name}
		b.acc[famIdx] = d
	}
	for i := range ch.containers {
		d.Containers = append(d.Containers, ch.containers[i])
		if ch.containers[i].Unresolved {
			d.Unresolved = append(d.Unresolved, ch.containers[i].Name)
		}
	}
	sum, ok := d.Effective.Add(ch.vec)
	if !ok {
		b.fail(request, d.Family, fmt.Sprint(ch.vec),
			fmt.Sprintf("the claim's %s demand does not fit in a 64-bit integer", d.Family))
		return
	}
	d.Effective = sum
}
