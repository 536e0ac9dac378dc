package decision

import (
	"fmt"
	"math"
	"math/big"

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
	demand    *effective.Demand
	invalid   []*effective.FieldError
	ns        ledger.NamespaceSnapshot
	capacity  ast.Value
	settings  ast.Value
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
	var eff effective.Vector
	if d.demand != nil {
		eff = d.demand.Effective
	}
	after := sum(d.ns.Used, d.ns.Reserved, eff)
	return ast.NewObject(
		item("apiVersion", str(InputAPIVersion)),
		item("kind", str(InputKind)),
		item("operation", str(d.req.Operation)),
		item("dryRun", ast.InternedTerm(d.req.DryRun)),
		item("namespace", str(d.namespace)),
		item("namespaceLabels", labelMap(d.ns.Labels)),
		item("userInfo", d.userTerm()),
		item("pod", d.podTerm()),
		item("demand", d.demandTerm()),
		item("namespaceUsage", ast.ObjectTerm(item("used", vector(d.ns.Used)), item("reserved", vector(d.ns.Reserved)),
			item("after", vector(after)), item("limits", d.limitsTerm(after)), item("nativeRequestQuotas", d.nativeTerm()))),
		item("capacity", ast.NewTerm(d.capacity)),
		item("settings", ast.NewTerm(d.settings)),
	)
}

// demandTerm is input.demand: the effective demand, the managed
// containers, the unresolved ones and the errors of an invalid request.
func (d *inputDoc) demandTerm() *ast.Term {
	var eff, maxPerDevice effective.Vector
	var cs, unresolved []*ast.Term
	if d.demand != nil {
		eff = d.demand.Effective
		cs = make([]*ast.Term, 0, len(d.demand.Containers))
		for _, c := range d.demand.Containers {
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
		unresolved = make([]*ast.Term, len(d.demand.Unresolved))
		for i, n := range d.demand.Unresolved {
			unresolved[i] = str(n)
		}
	}
	errs := make([]*ast.Term, len(d.invalid))
	for i, e := range d.invalid {
		errs[i] = ast.ObjectTerm(item("container", str(e.Container)), item("resource", str(e.Resource)),
			item("value", str(e.Value)), item("reason", str(e.Reason)))
	}
	return ast.ObjectTerm(item("effective", vector(eff)), item("containers", ast.ArrayTerm(cs...)),
		item("unresolved", ast.ArrayTerm(unresolved...)), item("errors", ast.ArrayTerm(errs...)),
		item("maxPerDevice", vector(maxPerDevice)))
}

// limitsTerm is input.namespaceUsage.limits: each limited dimension with
// the share of it the namespace uses after the pod.
func (d *inputDoc) limitsTerm(after effective.Vector) *ast.Term {
	limits := ast.NewObject()
	for _, l := range []struct {
		dim   string
		limit *ledger.Limit
		after int64
	}{{"gpu", d.ns.Limits.GPU, after.GPU}, {"gpumem", d.ns.Limits.MemMiB, after.MemMiB}, {"gpucores", d.ns.Limits.Cores, after.Cores}} {
		if l.limit != nil {
			limits.Insert(str(l.dim), ast.ObjectTerm(item("value", num(l.limit.Value)), item("quota", str(l.limit.Quota)),
				item("key", str(l.limit.Key)), item("invalid", ast.InternedTerm(l.limit.Invalid)),
				item("afterPercent", num(percent(l.after, l.limit.Value)))))
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

// sum adds vectors, saturating at math.MaxInt64 instead of overflowing.
func sum(vs ...effective.Vector) effective.Vector {
	var out effective.Vector
	for _, v := range vs {
		out = effective.Vector{GPU: satAdd(out.GPU, v.GPU), MemMiB: satAdd(out.MemMiB, v.MemMiB), Cores: satAdd(out.Cores, v.Cores)}
	}
	return out
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// percent is floor(a * 100 / limit), saturating; 0 for a zero limit.
func percent(a, limit int64) int64 {
	switch {
	case limit <= 0:
		return 0
	case a <= math.MaxInt64/100:
		return a * 100 / limit
	}
	p := new(big.Int).Mul(big.NewInt(a), big.NewInt(100))
	if p.Quo(p, big.NewInt(limit)); !p.IsInt64() {
		return math.MaxInt64
	}
	return p.Int64()
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

// settingsValue converts the settings the policies read.
func settingsValue(c *config.Configuration) (ast.Value, error) {
	s := config.Settings(c)
	unsat := UnsatisfiableDeny
	if *c.Admission.Unsatisfiable == configv1alpha1.UnsatisfiableWarn {
		unsat = UnsatisfiableWarn
	}
	doc := map[string]any{
		"resourceNames": map[string]any{
			"gpu": string(s.Names.Count), "gpumem": string(s.Names.Memory),
			"gpumem-percentage": string(s.Names.MemoryPercentage), "gpucores": string(s.Names.Cores),
		},
		"memoryFactor":     s.Factor(),
		"nearLimitPercent": *c.Admission.NearLimitPercent,
		"unsatisfiable":    unsat,
	}
	val, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("building the policy input's settings: %w", err)
	}
	return val, nil
}
