package decision

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/utils/ptr"

	"github.com/open-policy-agent/opa/v1/ast"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
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
// settings are converted once and reused (see Decider).
type inputDoc struct {
	req       Request
	namespace string
	// primary is the first family's name (nvidia): its demand and usage are
	// also at the input's first-level positions, where policies written
	// before families read them.
	primary  string
	demand   effective.Demands
	invalid  []*effective.FieldError
	ns       ledger.NamespaceSnapshot
	capacity ast.Value
	settings ast.Value
}

func str(s string) *ast.Term { return ast.InternedTerm(s) }

func num(n int64) *ast.Term { return ast.InternedTerm(n) }

func item(key string, value *ast.Term) [2]*ast.Term { return ast.Item(str(key), value) }

// labelMap converts a label-like map; a nil map is an empty object.
func labelMap(m map[string]string) *ast.Term {
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		items = append(items, item(k, str(v)))
	}
	return ast.ObjectTerm(items...)
}

func vector(v effective.Vector) *ast.Term {
	return ast.ObjectTerm(item("gpu", num(v.GPU)), item("gpumem", num(v.MemMiB)), item("gpucores", num(v.Cores)))
}

// value builds the document as an ast.Value directly (numbers are int64;
// no JSON or reflection round trip).
func (d *inputDoc) value() ast.Value {
	return ast.NewObject(
		item("apiVersion", str(InputAPIVersion)),
		item("kind", str(InputKind)),
		item("operation", str(d.req.Operation)),
		item("dryRun", ast.InternedTerm(d.req.DryRun)),
		item("namespace", str(d.namespace)),
		item("namespaceLabels", labelMap(d.ns.Labels)),
		item("userInfo", d.userTerm()),
		item("pod", d.podTerm()),
		item("claim", d.claimTerm()),
		item("demand", d.demandTerm()),
		item("namespaceUsage", d.usageTerm()),
		item("capacity", ast.NewTerm(d.capacity)),
		item("settings", ast.NewTerm(d.settings)),
	)
}

// after is the namespace's usage after the pod: used + reserved + demand.
func (d *inputDoc) after() effective.Usage {
	return sumUsage(d.ns.Used, d.ns.Reserved, d.demand.Effective())
}

// usageTerm is input.namespaceUsage: the first family's usage, after and
// limits at the first level, every family's under families, and the native
// requests quotas.
func (d *inputDoc) usageTerm() *ast.Term {
	after := d.after()
	fams := ast.NewObject()
	for _, f := range d.inView() {
		fams.Insert(str(f), ast.ObjectTerm(item("used", vector(d.ns.Used.Of(f))), item("reserved", vector(d.ns.Reserved.Of(f))),
			item("after", vector(after.Of(f))), item("limits", limitsTerm(d.ns.Limits[f], after.Of(f)))))
	}
	p := d.primary
	return ast.ObjectTerm(item("used", vector(d.ns.Used.Of(p))), item("reserved", vector(d.ns.Reserved.Of(p))),
		item("after", vector(after.Of(p))), item("limits", limitsTerm(d.ns.Limits[p], after.Of(p))),
		item("nativeRequestQuotas", d.nativeTerm()), item("families", ast.NewTerm(fams)))
}

// inView are the families the pod asks for or the namespace uses, reserves
// or limits, sorted.
func (d *inputDoc) inView() []string {
	set := map[string]bool{}
	for _, dm := range d.demand {
		set[dm.Family] = true
	}
	for _, u := range []effective.Usage{d.ns.Used, d.ns.Reserved} {
		for f := range u {
			set[f] = true
		}
	}
	for f := range d.ns.Limits {
		set[f] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// demandTerm is input.demand: the first family's effective demand, its
// containers and unresolved ones at the first level, every family's under
// families, and the errors of an invalid request (any family).
func (d *inputDoc) demandTerm() *ast.Term {
	fams := ast.NewObject()
	for _, dm := range d.demand {
		fams.Insert(str(dm.Family), ast.ObjectTerm(familyDemand(dm)...))
	}
	errs := make([]*ast.Term, len(d.invalid))
	for i, e := range d.invalid {
		errs[i] = ast.ObjectTerm(item("container", str(e.Container)), item("resource", str(e.Resource)),
			item("value", str(e.Value)), item("reason", str(e.Reason)))
	}
	items := append(familyDemand(d.demand.Of(d.primary)), item("errors", ast.ArrayTerm(errs...)), item("families", ast.NewTerm(fams)))
	return ast.ObjectTerm(items...)
}

// familyDemand is one family's demand in the input: effective, the
// containers naming the family, the unresolved ones, the largest
// per-device demand (zeros and empty lists for nil).
func familyDemand(dm *effective.Demand) [][2]*ast.Term {
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
			cs = append(cs, ast.ObjectTerm(
				item("name", str(c.Name)), item("role", str(string(c.Role))), item("gpu", num(c.Count)),
				item("gpumemPerDevice", num(c.MemPerDeviceMiB)), item("gpumemPercent", num(c.MemPercent)),
				item("gpucoresPerDevice", num(c.CoresPerDevice)), item("unresolved", ast.InternedTerm(c.Unresolved)),
				item("total", vector(c.Total))))
		}
		unresolved = make([]*ast.Term, len(dm.Unresolved))
		for i, n := range dm.Unresolved {
			unresolved[i] = str(n)
		}
	}
	return [][2]*ast.Term{item("effective", vector(eff)), item("containers", ast.ArrayTerm(cs...)),
		item("unresolved", ast.ArrayTerm(unresolved...)), item("maxPerDevice", vector(maxPerDevice))}
}

// limitsTerm is one family's limits in input.namespaceUsage: each limited
// dimension with the share of it the namespace uses after the pod.
func limitsTerm(l ledger.Limits, after effective.Vector) *ast.Term {
	limits := ast.NewObject()
	for _, l := range []struct {
		dim   string
		limit *ledger.Limit
		after int64
	}{{"gpu", l.GPU, after.GPU}, {"gpumem", l.MemMiB, after.MemMiB}, {"gpucores", l.Cores, after.Cores}} {
		if l.limit != nil {
			limits.Insert(str(l.dim), ast.ObjectTerm(item("value", num(l.limit.Value)), item("quota", str(l.limit.Quota)),
				item("key", str(l.limit.Key)), item("invalid", ast.InternedTerm(l.limit.Invalid)),
				item("afterPercent", num(effective.Percent(l.after, l.limit.Value)))))
		}
	}
	return ast.NewTerm(limits)
}

// nativeTerm is input.namespaceUsage.nativeRequestQuotas.
func (d *inputDoc) nativeTerm() *ast.Term {
	var native []*ast.Term
	for _, q := range d.ns.Quotas {
		for _, k := range q.NativeRequests {
			native = append(native, ast.ObjectTerm(item("quota", str(q.Name)), item("key", str(k))))
		}
	}
	return ast.ArrayTerm(native...)
}

// userTerm is input.userInfo.
func (d *inputDoc) userTerm() *ast.Term {
	groups := make([]*ast.Term, len(d.req.User.Groups))
	for i, g := range d.req.User.Groups {
		groups[i] = str(g)
	}
	return ast.ObjectTerm(item("username", str(d.req.User.Username)), item("groups", ast.ArrayTerm(groups...)))
}

// podTerm is input.pod.
func (d *inputDoc) podTerm() *ast.Term {
	pod := d.req.Pod
	return ast.ObjectTerm(item("name", str(pod.Name)), item("generateName", str(pod.GenerateName)), item("uid", str(string(pod.UID))),
		item("labels", labelMap(pod.Labels)), item("annotations", labelMap(pod.Annotations)), item("nodeSelector", labelMap(pod.Spec.NodeSelector)),
		item("priorityClassName", str(pod.Spec.PriorityClassName)), item("runtimeClassName", str(ptr.Deref(pod.Spec.RuntimeClassName, ""))),
		item("schedulerName", str(pod.Spec.SchedulerName)))
}

// claimTerm is input.claim: null for a pod; for a ResourceClaim its name
// and the classes its requests name.
func (d *inputDoc) claimTerm() *ast.Term {
	c := d.req.Claim
	if c == nil {
		return ast.NullTerm()
	}
	var classes []*ast.Term
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil {
			classes = append(classes, str(r.Exactly.DeviceClassName))
		}
		for _, sr := range r.FirstAvailable {
			classes = append(classes, str(sr.DeviceClassName))
		}
	}
	return ast.ObjectTerm(item("name", str(c.Name)), item("deviceClassNames", ast.ArrayTerm(classes...)))
}

// sumUsage adds usages per family, saturating instead of overflowing.
func sumUsage(us ...effective.Usage) effective.Usage {
	out := effective.Usage{}
	for _, u := range us {
		for f, v := range u {
			out[f] = sum(out[f], v)
		}
	}
	return out
}

// nonNegative is u with every negative dimension raised to zero.
func nonNegative(u effective.Usage) effective.Usage {
	zero := make(effective.Usage, len(u))
	for f := range u {
		zero[f] = effective.Vector{}
	}
	return u.Max(zero)
}

// sum adds vectors, saturating at math.MaxInt64 instead of overflowing.
func sum(vs ...effective.Vector) effective.Vector {
	var out effective.Vector
	for _, v := range vs {
		out = out.AddSat(v)
	}
	return out
}

// capacityValue converts a node view to the input's capacity document.
func capacityValue(v *nodeView) (ast.Value, error) {
	shapes := make([]any, 0, len(v.shapes))
	for _, s := range v.shapes {
		devs := make([]any, len(s.devices))
		var small device
		for i, d := range s.devices {
			devs[i] = map[string]any{"gpumem": d.memMiB, "gpucores": d.cores}
			if i == 0 {
				small = d
			}
			small = device{memMiB: min(small.memMiB, d.memMiB), cores: min(small.cores, d.cores)}
		}
		shapes = append(shapes, map[string]any{"nodes": int64(s.nodes), "example": s.example, "devices": devs, "deviceCount": int64(len(devs)),
			"smallest": map[string]any{"gpumem": small.memMiB, "gpucores": small.cores}})
	}
	doc := map[string]any{
		"gpuNodes": int64(v.gpuNodes), "eligibleNodes": int64(v.eligible), "maxDevicesPerNode": int64(v.maxDevices),
		"maxDeviceMemMiB": v.maxMemMiB, "shapes": shapes,
		"largestDevice": map[string]any{"node": "", "gpumem": int64(0), "gpucores": int64(0)},
	}
	if l := v.largest; l != nil {
		doc["largestDevice"] = map[string]any{"node": l.node, "gpumem": l.memMiB, "gpucores": l.cores}
	}
	val, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("building the policy input's capacity: %w", err)
	}
	return val, nil
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
		"memoryFactor": f.Factor(),
	}
}
