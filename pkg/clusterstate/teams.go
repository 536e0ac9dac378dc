package clusterstate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// GPUClusterQuotas is the resource of the GPUClusterQuota objects.
func GPUClusterQuotas() schema.GroupVersionResource {
	return gpuadmitv1.GroupVersion().WithResource(gpuadmitv1.ClusterQuotaResource)
}

// Teams are the team quotas (GPUClusterQuotas) of a dump or a cluster and
// their GPUReservationSets (TeamObjectName, in gpuadmit's namespace).
type Teams struct {
	Quotas []*gpuadmitv1.GPUClusterQuota
	// Objects are the status of each team's GPUReservationSet, by quota
	// name (a malformed one is left out, with a warning).
	Objects map[string]gpuadmitv1.GPUReservationSetStatus
	// PodsResourceVersion is what the pods were listed at ("" for a
	// dump: every reservation not recorded by the ledger counts).
	PodsResourceVersion string
	// Warnings say what could not be read.
	Warnings []string
}

// TeamsIn reads the GPUClusterQuotas and the teams' GPUReservationSets
// (named gcq.<quota>, in any namespace of the dump: a dump holds
// gpuadmit's namespace only if it was taken there) among a dump's other
// objects. A stamp in a dump is trusted as written: the command line
// has no key to verify it.
func TeamsIn(objs *manifest.Objects) (*Teams, error) {
	t := &Teams{Objects: map[string]gpuadmitv1.GPUReservationSetStatus{}}
	for _, o := range objs.Other {
		if o.APIVersion != gpuadmitv1.GroupVersion().String() {
			continue
		}
		switch o.Kind {
		case "GPUClusterQuota":
			q := &gpuadmitv1.GPUClusterQuota{}
			if err := json.Unmarshal(o.Object, q); err != nil {
				return nil, fmt.Errorf("%s: GPUClusterQuota %s: %w", o.Source, o.Name, err)
			}
			t.Quotas = append(t.Quotas, q)
		case "GPUReservationSet":
			set := &gpuadmitv1.GPUReservationSet{}
			if err := json.Unmarshal(o.Object, set); err != nil {
				return nil, fmt.Errorf("%s: GPUReservationSet %s/%s: %w", o.Source, o.Namespace, o.Name, err)
			}
			t.addObject(set)
		}
	}
	return t, nil
}

// ReadTeams lists the cluster's GPUClusterQuotas and the teams'
// GPUReservationSets in gpuadmit's namespace, at podsRV (the pods'
// resourceVersion). None, without an error, where the CRD is not
// installed; the API server's error as it is otherwise (Forbidden
// included: the caller warns).
func ReadTeams(ctx context.Context, c dynamic.Interface, namespace, podsRV string) (*Teams, error) {
	t := &Teams{Objects: map[string]gpuadmitv1.GPUReservationSetStatus{}, PodsResourceVersion: podsRV}
	err := pages(ctx, func(opts metav1.ListOptions) (metav1.ListInterface, error) {
		l, err := c.Resource(GPUClusterQuotas()).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			q := &gpuadmitv1.GPUClusterQuota{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, q); err != nil {
				return nil, fmt.Errorf("GPUClusterQuota %s: %w", l.Items[i].GetName(), err)
			}
			t.Quotas = append(t.Quotas, q)
		}
		return l, nil
	})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing gpuclusterquotas: %w", err)
	}
	for _, q := range t.Quotas {
		name := gpuadmitv1.TeamObjectName(q.Name)
		obj, err := c.Resource(GPUReservationSets()).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading GPUReservationSet %s/%s: %w", namespace, name, err)
		}
		if err := t.addUnstructured(obj); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// addUnstructured adds a team's GPUReservationSet read from the API.
func (t *Teams) addUnstructured(obj *unstructured.Unstructured) error {
	set := &gpuadmitv1.GPUReservationSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, set); err != nil {
		return fmt.Errorf("GPUReservationSet %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	t.addObject(set)
	return nil
}

// addObject keeps set's status under its quota's name when it is a
// team's object and well formed.
func (t *Teams) addObject(set *gpuadmitv1.GPUReservationSet) {
	quota, ok := strings.CutPrefix(set.Name, gpuadmitv1.TeamObjectPrefix)
	if !ok || quota == "" {
		return
	}
	if err := reservation.Validate(set); err != nil {
		t.Warnings = append(t.Warnings, fmt.Sprintf("%v: the team's reservations are not counted", err))
		return
	}
	t.Objects[quota] = set.Status
}

// Feed hands the team quotas to the ledger (as the webhook's watch does).
func (t *Teams) Feed(l *ledger.Ledger) {
	if t == nil {
		return
	}
	for _, q := range t.Quotas {
		l.UpsertClusterQuota(q)
	}
}

// For is what a request in namespace ns is decided against besides its
// namespace's quotas (decision.Request.Teams), as the webhook's round
// builds it: the teams that select ns now and those whose object lists ns
// as departed (a departure listed counts: the command line has no clock
// of the replicas' grace), sorted by name; each with its members and the
// reservations of its object that the ledger must count.
func (t *Teams) For(l *ledger.Ledger, ns string) []decision.Team {
	if t == nil {
		return nil
	}
	quotas := l.TeamsOf(ns)
	for name, st := range t.Objects {
		departed := slices.ContainsFunc(st.Departures, func(d gpuadmitv1.Departure) bool { return d.Namespace == ns })
		if q, ok := l.ClusterQuota(name); ok && departed &&
			!slices.ContainsFunc(quotas, func(o ledger.TeamQuota) bool { return o.Name == name }) {
			quotas = append(quotas, q)
		}
	}
	slices.SortFunc(quotas, func(a, b ledger.TeamQuota) int { return strings.Compare(a.Name, b.Name) })
	out := make([]decision.Team, 0, len(quotas))
	for _, q := range quotas {
		st := t.Objects[q.Name]
		members, _ := summary.Members(l.Selected(q.Name), st.Departures)
		out = append(out, decision.Team{Quota: q, Members: members, Reservations: reservation.Countable(st, t.PodsResourceVersion)})
	}
	return out
}
