package why

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// report is `gpuadmit why`'s JSON (docs/cli.md#why-why-a-workload-is-short).
type report struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Desired, Existing (not finished, not being deleted), Running and
	// Missing (desired less existing, at least 0) pods.
	Desired  int32 `json:"desired"`
	Existing int32 `json:"existing"`
	Running  int32 `json:"running"`
	Missing  int32 `json:"missing"`
	// Demand is one pod's effective demand in the first device family;
	// Families the others' (memory in MiB).
	Demand   effective.Vector            `json:"demand"`
	Families map[string]effective.Vector `json:"families,omitempty"`
	// LastDenial is the last denial gpuadmit's Events tell of (null: none).
	LastDenial *denial `json:"lastDenial"`
	// Short are the limits the missing pods do not fit under today: what
	// would have to be freed, or the limit raised by (empty: they fit).
	Short []shortfall `json:"short"`
	// Gang is the gang the workload's pods are in (null: none).
	Gang  *gang    `json:"gang"`
	Notes []string `json:"notes,omitempty"`
}

// shortfall is one limit the missing pods pass: they need Needed, the
// limit leaves Headroom (limit less used less reserved, at least 0), so
// Short must be freed or the limit raised by as much.
type shortfall struct {
	Family   string `json:"family"`
	Resource string `json:"resource"`
	PerPod   int64  `json:"perPod"`
	Needed   int64  `json:"needed"`
	Headroom int64  `json:"headroom"`
	Short    int64  `json:"short"`
	Limit    int64  `json:"limit"`
	Used     int64  `json:"used"`
	Reserved int64  `json:"reserved"`
	Quota    string `json:"quota"`
}

// explain builds the report on kind/name of ns: the workload and its pods
// (kc), its denials' Events, its gang (dc: the GPUReservationSet, nil
// when it cannot be read) and the namespace's usage n in families fams.
func explain(ctx context.Context, kc kubernetes.Interface, dc dynamic.Interface, ns, kind, name string,
	n ledger.NamespaceSnapshot, fams []effective.Family) (report, error) {
	r := report{Kind: kind, Namespace: ns, Name: name, Short: []shortfall{}}
	w, err := readWorkload(ctx, kc, ns, kind, name)
	if err != nil {
		return r, err
	}
	pods, err := countPods(ctx, kc, w)
	if err != nil {
		return r, err
	}
	r.Desired, r.Existing, r.Running = w.Desired, pods.existing, pods.running
	r.Missing = max(w.Desired-pods.existing, 0)
	demand, notes, err := demandOf(w, fams)
	if err != nil {
		return r, err
	}
	r.Notes = notes
	if r.LastDenial, err = lastDenial(ctx, kc, w); apierrors.IsForbidden(err) {
		r.Notes = append(r.Notes, fmt.Sprintf("the last denial is not known: %v", err))
	} else if err != nil {
		return r, err
	}
	r.Demand = demand.Of(fams[0].Name)
	for _, f := range fams[1:] {
		if v := demand.Of(f.Name); !v.IsZero() {
			if r.Families == nil {
				r.Families = map[string]effective.Vector{}
			}
			r.Families[f.Name] = v
		}
	}
	r.Short = shortfalls(r.Missing, demand, n, fams)
	r.Gang, r.Notes = gangOf(ctx, dc, w, r.Notes)
	return r, nil
}

// demandOf is one pod's effective demand, per family, from w's template.
func demandOf(w *workload, fams []effective.Family) (effective.Usage, []string, error) {
	pod := &corev1.Pod{ObjectMeta: *w.Template.ObjectMeta.DeepCopy(), Spec: *w.Template.Spec.DeepCopy()}
	pod.Namespace = w.Namespace
	u := effective.Usage{}
	var notes []string
	for _, f := range fams {
		d, err := effective.Compute(pod, f, effective.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("the pod template of %s/%s: %w", w.Kind, w.Name, err)
		}
		if !d.GPU() {
			continue
		}
		u[f.Name] = d.Effective
		if len(d.Unresolved) > 0 {
			notes = append(notes, fmt.Sprintf("containers %v ask for a percentage of a device's %s memory: not counted here (it depends on the node)",
				d.Unresolved, f.Name))
		}
	}
	return u, notes, nil
}

// shortfalls are the limits of n that missing pods of demand do not fit
// under: per family and dimension with a limit, missing × demand against
// the limit less used less reserved.
func shortfalls(missing int32, demand effective.Usage, n ledger.NamespaceSnapshot, fams []effective.Family) []shortfall {
	out := []shortfall{}
	if missing == 0 {
		return out
	}
	for i := range fams {
		f := &fams[i]
		per, lim := demand.Of(f.Name), n.Limits[f.Name]
		used, reserved := n.Used.Of(f.Name), n.Reserved.Of(f.Name)
		for _, d := range effective.Dimensions() {
			l := lim.Of(d)
			if l == nil || per.Get(d) == 0 {
				continue
			}
			needed := times(int64(missing), per.Get(d))
			headroom := max(l.Value-used.Get(d)-reserved.Get(d), 0)
			if needed <= headroom {
				continue
			}
			out = append(out, shortfall{Family: f.Name, Resource: string(f.Names.Of(d)), PerPod: per.Get(d), Needed: needed,
				Headroom: headroom, Short: needed - headroom, Limit: l.Value, Used: used.Get(d), Reserved: reserved.Get(d), Quota: l.Quota})
		}
	}
	return out
}

// times is a × b, at most math.MaxInt64 (a, b >= 0).
func times(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
