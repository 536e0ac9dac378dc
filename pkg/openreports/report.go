package openreports

import (
	"strconv"
	"time"

	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// Names and labels of the Reports gpuadmit writes.
const (
	// Name is the Report of each namespace.
	Name = "gpuadmit-quota"
	// Source is the Report's and results' source.
	Source = "gpuadmit"
	// Policy names the results' policy: the namespace's GPU limits.
	Policy = "gpuadmit-quota"
	// ManagedBy labels the Reports gpuadmit owns (the only ones it lists
	// and deletes).
	ManagedBy = "app.kubernetes.io/managed-by"
	managedBy = "gpuadmit"
)

// The results and severities gpuadmit writes (the CRD's enums).
const (
	resultPass     reportsv1alpha1.Result         = "pass"
	resultFail     reportsv1alpha1.Result         = "fail"
	resultError    reportsv1alpha1.Result         = "error"
	severityInfo   reportsv1alpha1.ResultSeverity = "info"
	severityMedium reportsv1alpha1.ResultSeverity = "medium"
	severityHigh   reportsv1alpha1.ResultSeverity = "high"
)

// desired is the Report of namespace n, with the results of the team
// quotas and the budgets that count it (teams): nil when it has no GPU
// limit, no team and no budget.
// Each result keeps the timestamp of prev's result for the same rule while
// its outcome and message stay (a rewrite with nothing new moves nothing).
func desired(n ledger.NamespaceSnapshot, fams []effective.Family, teams []reportsv1alpha1.ReportResult, prev *reportsv1alpha1.Report, now time.Time) *reportsv1alpha1.Report {
	uses := ledger.LimitUses(n, fams)
	if len(uses) == 0 && len(teams) == 0 {
		return nil
	}
	r := &reportsv1alpha1.Report{
		ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: Name, Labels: map[string]string{ManagedBy: managedBy}},
		Source:     Source,
		Scope:      &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: n.Namespace},
	}
	results := make([]reportsv1alpha1.ReportResult, 0, len(uses)+len(teams))
	for _, u := range uses {
		results = append(results, result(n.Namespace, u, now))
	}
	for _, res := range append(results, teams...) {
		if p := prevResult(prev, res.Rule); p != nil && p.Result == res.Result && p.Description == res.Description {
			res.Timestamp = p.Timestamp
		}
		r.Results = append(r.Results, res)
		switch res.Result {
		case resultPass:
			r.Summary.Pass++
		case resultFail:
			r.Summary.Fail++
		case resultWarn:
			r.Summary.Warn++
		default:
			r.Summary.Error++
		}
	}
	return r
}

// result is one limit's result: the rule is the resource, the subject the
// ResourceQuota that sets the limit.
func result(ns string, u ledger.LimitUse, now time.Time) reportsv1alpha1.ReportResult {
	out := reportsv1alpha1.ReportResult{
		Source: Source, Policy: Policy, Rule: u.Resource, Category: "GPU quota",
		Timestamp:   metav1.Timestamp{Seconds: now.Unix()},
		Result:      resultPass,
		Severity:    severityInfo,
		Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "ResourceQuota", Namespace: ns, Name: u.Quota}},
		Description: u.String(),
		Properties: map[string]string{
			"family": u.Family, "used": strconv.FormatInt(u.Used, 10), "reserved": strconv.FormatInt(u.Reserved, 10),
			"charged": strconv.FormatInt(u.Charged(), 10), "limit": strconv.FormatInt(u.Limit, 10), "key": u.Key,
		},
	}
	if u.Unit != "" {
		out.Properties["unit"] = u.Unit
	}
	switch {
	case u.Invalid:
		out.Result, out.Severity = resultError, severityMedium
	case u.Over():
		out.Result, out.Severity = resultFail, severityHigh
	}
	return out
}

func prevResult(prev *reportsv1alpha1.Report, rule string) *reportsv1alpha1.ReportResult {
	if prev == nil {
		return nil
	}
	for i := range prev.Results {
		if prev.Results[i].Rule == rule {
			return &prev.Results[i]
		}
	}
	return nil
}

// same compares what a Report says (source, scope, summary, results), not
// its metadata.
func same(a, b *reportsv1alpha1.Report) bool {
	return a.Source == b.Source && a.Summary == b.Summary && equality.Semantic.DeepEqual(a.Scope, b.Scope) &&
		equality.Semantic.DeepEqual(a.Results, b.Results)
}
