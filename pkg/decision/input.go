package decision

import (
	"fmt"
	"slices"

	"k8s.io/utils/ptr"

	"github.com/open-policy-agent/opa/v1/ast"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
)

// The policy input document's version (docs/policy-input.md).
const (
	InputAPIVersion = "gpuadmit.io/v1alpha1"
	InputKind       = "PolicyInput"
)

// Values of the input's settings.unsatisfiable.
const (
	UnsatisfiableDeny = "deny"
	UnsatisfiableWarn = "warn"
)

// inputDoc is one request's input document before conversion. Capacity and
// settings are converted once and reused (see Decider), and so are the
// document's words.
type inputDoc struct {
	req       Request
	namespace string
	// primary is the first family's name (nvidia): its demand and usage are
	// also at the input's first-level positions, where policies written
	// before families read them.
	primary string
	demand  effective.Demands
	// reserve is what the admission reserves (podDemand's own; a
	// claim's demand); the policies never read it.
	reserve effective.Demands
	invalid []*effective.FieldError
	ns      ledger.NamespaceSnapshot
	// scoped are the namespace's scoped quotas the pod is in (none for a
	// claim: no scope matches a claim, as in-tree).
	scoped []*ledger.ScopedQuota
	// teams are the limits of the team quotas that count the namespace
	// (teams.go).
	teams []teamCheck
	// budgets are the GPU-hour budgets of the namespace against the
	// request (budgets.go), budgetProblems what they cannot enforce.
	budgets        []budgetEntry
	budgetProblems []budgetProblem
	capacity       ast.Value
	settings       ast.Value
	// view is the nodes behind capacity (nil: none, as for a claim) and
	// nearLimit the settings' nearLimitPercent, for input.guard.
	view      *nodeView
	nearLimit int64
	// eff and afterUsage are the demand's effective usage and the
	// namespace's after the pod, computed once per value (a copy of the
	// document with other reservations computes its own).
	eff, afterUsage effective.Usage
	words           words
	memo            *memo
}

// value builds the document as an ast.Value directly (numbers are int64;
// no JSON or reflection round trip), with the parts reads names: a part no
// rule of the policy set reads is left out (policy.Reads).
func (d *inputDoc) value(reads *policy.Reads) ast.Value {
	b := &builder{words: d.words, memo: d.memo}
	d.afterUsage = sumUsage(d.ns.Used, d.ns.Reserved, d.effUsage())
	keys := [...]string{"apiVersion", "kind", "operation", "dryRun", "namespace", "namespaceLabels", "userInfo", "pod", "claim",
		"demand", "namespaceUsage", "teamLimits", "budgets", "budgetProblems", "capacity", "settings"}
	items := make([][2]*ast.Term, 0, len(keys))
	for _, k := range keys {
		if reads.Has(k) {
			items = append(items, b.item(k, d.part(b, k, reads)))
		}
	}
	if reads.Has("guard") {
		items = append(items, b.item("guard", d.guardTerm(b, reads.Under("guard"), reads.GuardsTrusted(), items)))
	}
	return ast.NewObject(items...)
}

// part is the input's first-level part key.
func (d *inputDoc) part(b *builder, key string, reads *policy.Reads) *ast.Term {
	switch key {
	case "apiVersion":
		return b.str(InputAPIVersion)
	case "kind":
		return b.str(InputKind)
	case "operation":
		return b.str(d.req.Operation)
	case "dryRun":
		return ast.InternedTerm(d.req.DryRun)
	case "namespace":
		return b.str(d.namespace)
	case "namespaceLabels":
		return b.nsLabels(d.namespace, d.ns.Labels)
	case "userInfo":
		return d.userTerm(b)
	case "pod":
		return d.podTerm(b, reads.Under("pod"))
	case "claim":
		return d.claimTerm(b)
	case "demand":
		return d.demandTerm(b)
	case "namespaceUsage":
		return d.usageTerm(b)
	case "teamLimits":
		return d.teamsTerm(b)
	case "budgets", "budgetProblems":
		return d.budgetPart(b, key)
	case "capacity":
		return b.term(d.capacity)
	default:
		return b.term(d.settings)
	}
}

// after is the namespace's usage after the pod: used + reserved + demand
// (value computes it once per document).
func (d *inputDoc) after() effective.Usage {
	if d.afterUsage != nil {
		return d.afterUsage
	}
	return sumUsage(d.ns.Used, d.ns.Reserved, d.effUsage())
}

// effUsage is the demand's effective usage, computed once per document.
func (d *inputDoc) effUsage() effective.Usage {
	if d.eff == nil {
		d.eff = d.demand.Effective()
	}
	return d.eff
}

// usageTerm is input.namespaceUsage: the first family's usage, after and
// limits at the first level, every family's under families (the same
// terms), and the native requests quotas.
func (d *inputDoc) usageTerm(b *builder) *ast.Term {
	after, inView := d.after(), d.inView()
	fams := make([][2]*ast.Term, 0, len(inView))
	var primary [][2]*ast.Term
	for _, f := range inView {
		items := d.familyUsage(b, f, after.Of(f))
		fams = append(fams, b.item(f, b.shared(items...)))
		if f == d.primary {
			primary = items
		}
	}
	if primary == nil {
		primary = d.familyUsage(b, d.primary, after.Of(d.primary))
	}
	return b.shared(append(primary, b.item("scopedLimits", d.scopedTerm(b, inView)), b.item("nativeRequestQuotas", d.nativeTerm(b)),
		b.item("families", b.shared(fams...)))...)
}

// familyUsage is one family's used, reserved, after and limits.
func (d *inputDoc) familyUsage(b *builder, f string, after effective.Vector) [][2]*ast.Term {
	return [][2]*ast.Term{b.item("used", b.podVector(d.ns.Used.Of(f))), b.item("reserved", b.podVector(d.ns.Reserved.Of(f))),
		b.item("after", b.podVector(after)), b.item("limits", b.limitsTerm(d.ns.Limits[f], after))}
}

// inView are the families the pod asks for or the namespace uses, reserves
// or limits, sorted.
func (d *inputDoc) inView() []string {
	set := make([]string, 0, 4)
	add := func(f string) {
		if !slices.Contains(set, f) {
			set = append(set, f)
		}
	}
	for _, dm := range d.demand {
		add(dm.Family)
	}
	for f := range d.ns.Used {
		add(f)
	}
	for f := range d.ns.Reserved {
		add(f)
	}
	for f := range d.ns.Limits {
		add(f)
	}
	for _, q := range d.scoped {
		for f := range q.Limits {
			add(f)
		}
	}
	slices.Sort(set)
	return set
}

// demandTerm is input.demand: the first family's effective demand, its
// containers and unresolved ones at the first level, every family's under
// families (the same terms), and the errors of an invalid request (any
// family).
func (d *inputDoc) demandTerm(b *builder) *ast.Term {
	fams := make([][2]*ast.Term, 0, len(d.demand))
	var primary [][2]*ast.Term
	for _, dm := range d.demand {
		items := b.familyDemand(dm)
		fams = append(fams, b.item(dm.Family, b.shared(items...)))
		if dm.Family == d.primary {
			primary = items
		}
	}
	if primary == nil {
		primary = b.familyDemand(nil)
	}
	errs := make([]*ast.Term, len(d.invalid))
	for i, e := range d.invalid {
		errs[i] = b.object(b.item("container", b.str(e.Container)), b.item("resource", b.str(e.Resource)),
			b.item("value", b.str(e.Value)), b.item("reason", b.str(e.Reason)))
	}
	return b.shared(append(primary, b.item("errors", b.array(errs...)), b.item("families", b.shared(fams...)))...)
}

// familyDemand is one family's demand in the input: effective, the
// containers naming the family, the unresolved ones, the largest
// per-device demand (zeros and empty lists for nil).
func (b *builder) familyDemand(dm *effective.Demand) [][2]*ast.Term {
	var eff, maxPerDevice effective.Vector
	var cs, unresolved []*ast.Term
	if dm != nil {
		eff = dm.Effective
		cs = make([]*ast.Term, 0, len(dm.Containers))
		for _, c := range dm.Containers {
			if !c.Managed {
				continue
			}
			maxPerDevice = maxPerDevice.Max(effective.Vector{GPU: c.Count, MemMiB: c.MemPerDeviceMiB, Cores: c.CoresPerDevice})
			cs = append(cs, b.container(&c))
		}
		unresolved = make([]*ast.Term, len(dm.Unresolved))
		for i, n := range dm.Unresolved {
			unresolved[i] = b.str(n)
		}
	}
	return [][2]*ast.Term{b.item("effective", b.podVector(eff)), b.item("containers", b.sharedArray(cs...)),
		b.item("unresolved", b.array(unresolved...)), b.item("maxPerDevice", b.podVector(maxPerDevice))}
}

// limitsTerm is one family's limits in input.namespaceUsage: each limited
// dimension with the share of it the namespace uses after the pod.
func (b *builder) limitsTerm(l ledger.Limits, after effective.Vector) *ast.Term {
	var k limitsKey
	keep := b.memo != nil
	for i, dim := range effective.Dimensions() {
		if lim := l.Of(dim); lim != nil {
			k.set[i], k.limits[i] = true, limitKey{*lim, effective.Percent(after.Get(dim), lim.Value)}
			keep = keep && len(lim.Quota) <= memoStringMax && len(lim.Key) <= 2*memoStringMax
		}
	}
	if !keep {
		return b.limitsOf(&k)
	}
	return b.memo.limitSets.get(k, func(mb *builder) *ast.Term { return mb.limitsOf(&k) })
}

// limitsOf makes the term of one family's limits.
func (b *builder) limitsOf(k *limitsKey) *ast.Term {
	items := make([][2]*ast.Term, 0, len(k.limits))
	for i, dim := range effective.Dimensions() {
		if k.set[i] {
			items = append(items, b.item(dimKey(dim), b.limit(&k.limits[i].limit, k.limits[i].afterPercent)))
		}
	}
	return b.object(items...)
}

// nativeTerm is input.namespaceUsage.nativeRequestQuotas.
func (d *inputDoc) nativeTerm(b *builder) *ast.Term {
	var native []*ast.Term
	for _, q := range d.ns.Quotas {
		for _, k := range q.NativeRequests {
			native = append(native, b.object(b.item("quota", b.str(q.Name)), b.item("key", b.str(k))))
		}
	}
	return b.array(native...)
}

// userTerm is input.userInfo.
func (d *inputDoc) userTerm(b *builder) *ast.Term {
	groups := make([]*ast.Term, len(d.req.User.Groups))
	for i, g := range d.req.User.Groups {
		groups[i] = b.str(g)
	}
	return b.object(b.item("username", b.str(d.req.User.Username)), b.item("groups", b.array(groups...)))
}

// podTerm is input.pod, with the fields reads names.
func (d *inputDoc) podTerm(b *builder, reads *policy.Reads) *ast.Term {
	keys := [...]string{"name", "generateName", "uid", "labels", "annotations", "nodeSelector", "priorityClassName", "runtimeClassName", "schedulerName"}
	items := make([][2]*ast.Term, 0, len(keys))
	for _, k := range keys {
		if reads.Has(k) {
			items = append(items, b.item(k, d.podField(b, k)))
		}
	}
	return b.object(items...)
}

// podField is the input's pod field key.
func (d *inputDoc) podField(b *builder, key string) *ast.Term {
	pod := d.req.Pod
	switch key {
	case "name":
		return b.str(pod.Name)
	case "generateName":
		return b.str(pod.GenerateName)
	case "uid":
		return b.str(string(pod.UID))
	case "labels":
		return b.labelMap(pod.Labels)
	case "annotations":
		return b.labelMap(pod.Annotations)
	case "nodeSelector":
		return b.labelMap(pod.Spec.NodeSelector)
	case "priorityClassName":
		return b.str(pod.Spec.PriorityClassName)
	case "runtimeClassName":
		return b.str(ptr.Deref(pod.Spec.RuntimeClassName, ""))
	default:
		return b.str(pod.Spec.SchedulerName)
	}
}

// claimTerm is input.claim: null for a pod; for a ResourceClaim its name
// and the classes its requests name.
func (d *inputDoc) claimTerm(b *builder) *ast.Term {
	c := d.req.Claim
	if c == nil {
		return ast.NullTerm()
	}
	var classes []*ast.Term
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil {
			classes = append(classes, b.str(r.Exactly.DeviceClassName))
		}
		for _, sr := range r.FirstAvailable {
			classes = append(classes, b.str(sr.DeviceClassName))
		}
	}
	return b.object(b.item("name", b.str(c.Name)), b.item("deviceClassNames", b.array(classes...)))
}

// settingsValue converts the settings the policies read: c's admission
// section and the families' resource names (fams[0], nvidia, also at the
// first level).
func settingsValue(c *config.Configuration, fams []effective.Family) (ast.Value, error) {
	unsat := UnsatisfiableDeny
	if *c.Admission.Unsatisfiable == configv1alpha1.UnsatisfiableWarn {
		unsat = UnsatisfiableWarn
	}
	byName := make(map[string]any, len(fams))
	for i := range fams {
		byName[fams[i].Name] = familySettings(&fams[i])
	}
	doc := familySettings(&fams[0])
	delete(doc, "registerAnnotation") // under families only
	doc["families"] = byName
	doc["nearLimitPercent"] = *c.Admission.NearLimitPercent
	doc["unsatisfiable"] = unsat
	val, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("building the policy input's settings: %w", err)
	}
	return val, nil
}

// familySettings are what the policies read of one family: its resource
// names by dimension and its memory factor.
func familySettings(f *effective.Family) map[string]any {
	return map[string]any{
		"resourceNames": map[string]any{
			"gpu": string(f.Names.Count), "gpumem": string(f.Names.Memory),
			"gpumem-percentage": string(f.Names.MemoryPercentage), "gpucores": string(f.Names.Cores),
		},
		"memoryFactor":       f.Factor(),
		"registerAnnotation": f.RegisterAnno,
	}
}
