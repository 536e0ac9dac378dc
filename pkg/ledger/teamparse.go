package ledger

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/quotacheck"
)

// PerUserKeyPrefix starts the key of a problem of a GPUClusterQuota's
// spec.perUser (a spec.hard problem names the key alone).
const PerUserKeyPrefix = "perUser "

// SelectorKey is the key of a problem of a GPUClusterQuota's
// spec.namespaceSelector.
const SelectorKey = "namespaceSelector"

// notTeamKey says why a key of a GPUClusterQuota's spec.hard or
// spec.perUser that is no governed family's limits. key is not enforced.
const notTeamKey = "a GPUClusterQuota enforces only the limits.<resource> keys of the governed device families: nothing enforces this key"

// parseTeam reads a GPUClusterQuota (pure: no ledger state).
func (l *Ledger) parseTeam(q *gpuadmitv1.GPUClusterQuota) *teamQuota {
	t := &teamQuota{quota: TeamQuota{Name: q.Name, UID: q.UID}}
	t.quota.Limits = l.parseTeamLimits(&t.quota, q.Spec.Hard, "")
	t.quota.PerUser = l.parseTeamLimits(&t.quota, q.Spec.PerUser, PerUserKeyPrefix)
	if len(q.Spec.Namespaces) > 0 {
		t.names = make(map[string]bool, len(q.Spec.Namespaces))
		for _, ns := range q.Spec.Namespaces {
			t.names[ns] = true
		}
	}
	if sel := q.Spec.NamespaceSelector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.quota.Problems = append(t.quota.Problems, Problem{Kind: ProblemQuota, Name: q.Name, UID: q.UID, Key: SelectorKey,
				Message: fmt.Sprintf("unusable, so it selects no namespace (only spec.namespaces count): %v", err)})
		} else if s != labels.Nothing() {
			t.selector = s
		}
	}
	sortProblems(t.quota.Problems)
	return t
}

// parseTeamLimits reads one list of a GPUClusterQuota (spec.hard, or
// spec.perUser with its problems' keys prefixed) per family, adding its
// problems to tq's: a value not enforced as written, and every key that is
// no governed family's limits. key.
func (l *Ledger) parseTeamLimits(tq *TeamQuota, hard corev1.ResourceList, prefix string) map[string]Limits {
	var out map[string]Limits
	src := limitSource{name: tq.Name, uid: tq.UID, hard: hard, problemKey: prefix}
	enforced := map[corev1.ResourceName]bool{}
	for i := range l.families {
		f := &l.families[i]
		lim, problems := parseLimits(src, f)
		tq.Problems = append(tq.Problems, problems...)
		for _, p := range []*Limit{lim.GPU, lim.MemMiB, lim.Cores} {
			if p != nil {
				enforced[corev1.ResourceName(p.Key)] = true
			}
		}
		if lim != (Limits{}) {
			if out == nil {
				out = map[string]Limits{}
			}
			out[f.Name] = lim
		}
	}
	why := map[string]quotacheck.Finding{}
	for _, u := range quotacheck.Ungoverned(hard, l.families) {
		why[u.Key] = u
	}
	for _, key := range slices.Sorted(maps.Keys(hard)) {
		if enforced[key] {
			continue
		}
		msg := notTeamKey
		if u, ok := why[string(key)]; ok {
			msg = u.Message
		}
		tq.Problems = append(tq.Problems, Problem{Kind: ProblemUngoverned, Name: tq.Name, UID: tq.UID,
			Key: prefix + string(key), Value: quotacheck.Written(hard[key]), Message: msg})
	}
	return out
}
