package top

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// whatIfExample is how --what-if is written.
const whatIfExample = "want NAMESPACE=RESOURCE=LIMIT, as in team-a=nvidia.com/gpumem=8192 (or gcq/QUOTA=RESOURCE=LIMIT for a team quota)"

// teamPrefix marks a --what-if of a team quota (GPUClusterQuota): a
// namespace's name has no "/".
const teamPrefix = "gcq/"

// whatIf is one --what-if: a namespace's limit on a resource replaced,
// for the evaluation only. Limit is in the resource's own unit as given,
// and, once resolved, MiB for memory (times memoryFactor, as a quota's).
type whatIf struct {
	arg                        string
	namespace, resource, value string
	// quota is the team quota (GPUClusterQuota) of a what-if written
	// gcq/QUOTA=...; namespace is then "".
	quota string
	// family and dim are the resolved resource's family and dimension,
	// limit its value.
	family string
	dim    effective.Dimension
	limit  int64
}

// whatIfShown is a --what-if as top's JSON shows it: the limit used and
// the actual one it replaced (absent when none; actualInvalid when the
// quota's value is not usable, and blocks).
type whatIfShown struct {
	Namespace     string `json:"namespace,omitempty"`
	Quota         string `json:"quota,omitempty"`
	Resource      string `json:"resource"`
	Limit         int64  `json:"limit"`
	Actual        *int64 `json:"actual,omitempty"`
	ActualInvalid bool   `json:"actualInvalid,omitempty"`
}

// parseWhatIfs reads every --what-if: NAMESPACE=RESOURCE=LIMIT, RESOURCE
// with or without the limits. prefix, each namespace and resource once.
func parseWhatIfs(args []string) ([]whatIf, error) {
	out := make([]whatIf, 0, len(args))
	for _, arg := range args {
		w, err := parseWhatIf(arg)
		if err != nil {
			return nil, cmdline.UsageErrorf("--what-if %q: %w", arg, err)
		}
		if slices.ContainsFunc(out, func(o whatIf) bool {
			return o.namespace == w.namespace && o.quota == w.quota && o.resource == w.resource
		}) {
			who := "namespace " + w.namespace
			if w.quota != "" {
				who = "GPUClusterQuota " + w.quota
			}
			return nil, cmdline.UsageErrorf("--what-if %q: %s's %s is given twice", arg, who, w.resource)
		}
		out = append(out, w)
	}
	return out, nil
}

func parseWhatIf(arg string) (whatIf, error) {
	parts := strings.SplitN(arg, "=", 3)
	if len(parts) < 3 {
		return whatIf{}, fmt.Errorf("%s", whatIfExample)
	}
	w := whatIf{arg: arg, namespace: strings.TrimSpace(parts[0]), value: strings.TrimSpace(parts[2])}
	w.resource = strings.TrimPrefix(strings.TrimSpace(parts[1]), "limits.")
	for _, p := range []struct{ what, v string }{{"namespace", w.namespace}, {"resource", w.resource}, {"limit", w.value}} {
		if p.v == "" {
			return whatIf{}, fmt.Errorf("the %s is empty; %s", p.what, whatIfExample)
		}
	}
	if quota, ok := strings.CutPrefix(w.namespace, teamPrefix); ok {
		if errs := validation.IsDNS1123Subdomain(quota); len(errs) > 0 {
			return whatIf{}, fmt.Errorf("%q is not a GPUClusterQuota name: %s", quota, strings.Join(errs, "; "))
		}
		w.namespace, w.quota = "", quota
		return w, nil
	}
	if errs := validation.IsDNS1123Label(w.namespace); len(errs) > 0 {
		return whatIf{}, fmt.Errorf("%q is not a namespace name: %s", w.namespace, strings.Join(errs, "; "))
	}
	return w, nil
}

// resolve finds w's resource among the families' and reads its limit as
// a quota value (memory times memoryFactor).
func (w *whatIf) resolve(fams []effective.Family) error {
	for i := range fams {
		f := &fams[i]
		for _, d := range effective.Dimensions() {
			if name := f.Names.Of(d); name == "" || string(name) != w.resource {
				continue
			}
			factor := int64(1)
			if d == effective.DimensionMemory {
				factor = f.Factor()
			}
			v, err := ledger.QuotaValue(w.value, d == effective.DimensionMemory, factor)
			if err != nil {
				return cmdline.UsageErrorf("--what-if %q: limit %q of %s: %w", w.arg, w.value, w.resource, err)
			}
			w.family, w.dim, w.limit = f.Name, d, v
			return nil
		}
	}
	return cmdline.UsageErrorf("--what-if %q: %s is not a resource gpuadmit manages; the managed ones are %s",
		w.arg, w.resource, strings.Join(managedResources(fams), ", "))
}

// managedResources are the resources a quota limits, family by family.
func managedResources(fams []effective.Family) []string {
	var out []string
	for _, f := range fams {
		for _, d := range effective.Dimensions() {
			if r := string(f.Names.Of(d)); r != "" && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// applyWhatIfs resolves the what-ifs and replaces, in s, each one's
// namespace's limit; a namespace s does not show is an error.
func applyWhatIfs(s ledger.Snapshot, ws []whatIf, fams []effective.Family, only string) ([]whatIfShown, error) {
	var shown []whatIfShown
	for i := range ws {
		w := &ws[i]
		if err := w.resolve(fams); err != nil {
			return nil, err
		}
		if w.quota != "" {
			continue // a team's (applyTeamWhatIfs)
		}
		ns, ok := s.Namespaces[w.namespace]
		switch {
		case !ok && only != "":
			return nil, cmdline.UsageErrorf("--what-if %q: namespace %s is not shown (-n %s)", w.arg, w.namespace, only)
		case !ok:
			return nil, cmdline.UsageErrorf("--what-if %q: namespace %s has no GPU pods, claims or ResourceQuotas in the state; the namespaces shown are %s",
				w.arg, w.namespace, strings.Join(source.SortedNamespaces(s), ", "))
		}
		ns.Limits = maps.Clone(ns.Limits) // the ledger's, shared: read only
		if ns.Limits == nil {
			ns.Limits = map[string]ledger.Limits{}
		}
		lim := ns.Limits[w.family]
		sh := whatIfShown{Namespace: w.namespace, Resource: w.resource, Limit: w.limit}
		switch old := lim.Of(w.dim); {
		case old != nil && old.Invalid:
			sh.ActualInvalid = true
		case old != nil:
			sh.Actual = &old.Value
		}
		ns.Limits[w.family] = lim.With(w.dim, &ledger.Limit{Value: w.limit, Key: "limits." + w.resource})
		s.Namespaces[w.namespace] = ns
		shown = append(shown, sh)
	}
	return shown, nil
}

// applyTeamWhatIfs replaces, in copies of teams, each team what-if's
// limit (ws resolved by applyWhatIfs); a team not shown is an error.
func applyTeamWhatIfs(teams []summary.Team, ws []whatIf) ([]summary.Team, []whatIfShown, error) {
	out := slices.Clone(teams)
	var shown []whatIfShown
	for _, w := range ws {
		if w.quota == "" {
			continue
		}
		i := slices.IndexFunc(out, func(t summary.Team) bool { return t.Quota.Name == w.quota })
		if i < 0 {
			names := make([]string, 0, len(out))
			for _, t := range out {
				names = append(names, t.Quota.Name)
			}
			return nil, nil, cmdline.UsageErrorf("--what-if %q: GPUClusterQuota %s does not count a namespace shown; the team quotas shown are %s",
				w.arg, w.quota, cmp.Or(strings.Join(names, ", "), "none"))
		}
		q := &out[i].Quota
		q.Limits = maps.Clone(q.Limits)
		if q.Limits == nil {
			q.Limits = map[string]ledger.Limits{}
		}
		lim := q.Limits[w.family]
		sh := whatIfShown{Quota: w.quota, Resource: w.resource, Limit: w.limit}
		switch old := lim.Of(w.dim); {
		case old != nil && old.Invalid:
			sh.ActualInvalid = true
		case old != nil:
			sh.Actual = &old.Value
		}
		q.Limits[w.family] = lim.With(w.dim, &ledger.Limit{Value: w.limit, Quota: w.quota, Key: "limits." + w.resource})
		shown = append(shown, sh)
	}
	return out, shown, nil
}

// isWhatIf reports whether the limit of o in namespace ns is a what-if's.
func isWhatIf(ws []whatIf, ns string, o ledger.LimitUse) bool {
	return slices.ContainsFunc(ws, func(w whatIf) bool { return w.namespace == ns && w.resource == o.Resource })
}
