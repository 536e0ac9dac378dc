package openreports

import (
	"context"
	"fmt"
	"strings"
	"time"

	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// teamCategory is the category of a team quota's results.
const teamCategory = "GPU team quota"

// teamsByNamespace are the team quotas that count each namespace, with
// the team's usage (summary.TeamOf: its namespaces together, its object's
// reservations counted), read from the ledger and the teams' objects in
// Namespace.
func (w *Writer) teamsByNamespace(ctx context.Context) (map[string][]summary.Team, error) {
	out := map[string][]summary.Team{}
	for _, q := range w.Ledger.ClusterQuotas() {
		var st gpuadmitv1.GPUReservationSetStatus
		if w.Namespace != "" {
			set := &gpuadmitv1.GPUReservationSet{}
			err := w.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: gpuadmitv1.TeamObjectName(q.Name)}, set)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, fmt.Errorf("reading the reservations of GPUClusterQuota %s: %w", q.Name, err)
			default:
				st = set.Status
			}
		}
		t := summary.TeamOf(w.Ledger, q, st, "")
		for _, n := range t.Namespaces {
			out[n.Name] = append(out[n.Name], t)
		}
	}
	return out, nil
}

// teamResults are the results of the limits of the teams that count ns:
// each team limit's rule is "GPUClusterQuota <name>: <resource>", its
// subject the GPUClusterQuota; used and reserved are the team's, over
// its namespaces together.
func teamResults(ns string, teams []summary.Team, fams []effective.Family, now time.Time) []reportsv1alpha1.ReportResult {
	var out []reportsv1alpha1.ReportResult
	for _, t := range teams {
		for _, u := range teamUses(t, fams) {
			r := result(ns, u, now)
			r.Rule, r.Category = "GPUClusterQuota "+t.Quota.Name+": "+u.Resource, teamCategory
			r.Subjects = []corev1.ObjectReference{{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: "GPUClusterQuota", Name: t.Quota.Name}}
			r.Description = strings.Replace(r.Description, "ResourceQuota "+t.Quota.Name, "GPUClusterQuota "+t.Quota.Name+" (the team's namespaces together)", 1)
			out = append(out, r)
		}
	}
	return out
}

// teamUses are the team's limits with the team's charge.
func teamUses(t summary.Team, fams []effective.Family) []ledger.LimitUse {
	var out []ledger.LimitUse
	for i := range fams {
		f := &fams[i]
		for _, d := range effective.Dimensions() {
			l, name := t.Quota.Limits[f.Name].Of(d), string(f.Names.Of(d))
			if l == nil || name == "" {
				continue
			}
			u := ledger.LimitUse{Family: f.Name, Resource: name, Dimension: d, Used: t.Usage.Used.Of(f.Name).Get(d),
				Reserved: t.Usage.Reserved.Of(f.Name).Get(d), Limit: l.Value, Quota: t.Quota.Name, Key: l.Key, Invalid: l.Invalid}
			if d == effective.DimensionMemory {
				u.Unit = "MiB"
			}
			out = append(out, u)
		}
	}
	return out
}
