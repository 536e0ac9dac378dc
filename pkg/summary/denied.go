package summary

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/events"
)

// What the denials' Events are recognised by (pkg/events, pkg/admission
// write them; TestDeniedEventsNames holds them equal).
const (
	// deniedComponent is the reporting component of the denials' Events.
	deniedComponent = events.Source
	// workloadAnnotation marks an Event about a ReplicaSet or a Job whose
	// denial was also recorded on its Deployment or CronJob.
	workloadAnnotation = "gpuadmit.io/workload"
)

// deniedReasons are the reasons of the denials' Events.
var deniedReasons = []string{"GPUQuotaExceeded", "GPUPolicyDenied"}

// DeniedWindow is how long a workload stays in GPUUsage's deniedWorkloads
// after its last denial's Event (the API server's default Event lifetime).
const DeniedWindow = time.Hour

// denials are the denials' Events of every namespace, as an informer on
// Events holds them (only those of gpuadmit's component, each cut to the
// fields read), for one term of the election.
type denials struct {
	informer cache.SharedIndexInformer
}

// startDenials starts the informer of the denials' Events, until ctx ends.
func startDenials(ctx context.Context, kube kubernetes.Interface) *denials {
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("reportingComponent", deniedComponent).String()
		}),
		informers.WithTransform(slimEvent))
	d := &denials{informer: f.Core().V1().Events().Informer()}
	f.Start(ctx.Done())
	return d
}

// slimEvent keeps what deniedWorkloads reads of an Event.
func slimEvent(obj any) (any, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name, ResourceVersion: e.ResourceVersion},
		InvolvedObject: corev1.ObjectReference{APIVersion: e.InvolvedObject.APIVersion, Kind: e.InvolvedObject.Kind,
			Name: e.InvolvedObject.Name},
		Reason: e.Reason, Message: e.Message, Count: e.Count, LastTimestamp: e.LastTimestamp, EventTime: e.EventTime,
		FirstTimestamp: e.FirstTimestamp, Series: e.Series, ReportingController: e.ReportingController, Source: corev1.EventSource{Component: e.Source.Component},
	}
	if w, ok := e.Annotations[workloadAnnotation]; ok {
		slim.Annotations = map[string]string{workloadAnnotation: w}
	}
	return slim, nil
}

// of lists ns's denied workloads at now; ok is false while the informer
// has not synced (the status keeps what it said).
func (d *denials) of(ns string, now time.Time) (_ []gpuadmitv1.DeniedWorkload, ok bool) {
	if d == nil || !d.informer.HasSynced() {
		return nil, false
	}
	objs, err := d.informer.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return nil, false
	}
	evs := make([]*corev1.Event, 0, len(objs))
	for _, o := range objs {
		if e, ok := o.(*corev1.Event); ok {
			evs = append(evs, e)
		}
	}
	return deniedWorkloads(evs, now), true
}

// deniedWorkloads folds the denials' Events into the workloads they are
// about: the Events of gpuadmit's component with a denial's reason about
// an object of a group (not a Pod, a Namespace or a ResourceQuota), not
// marked as recorded on an owner too, whose last time is within
// DeniedWindow of now; per workload the counts summed and the latest
// Event's reason and message; the latest first, at most
// MaxDeniedWorkloads.
func deniedWorkloads(evs []*corev1.Event, now time.Time) []gpuadmitv1.DeniedWorkload {
	type key struct{ apiVersion, kind, name string }
	byKey := map[key]*gpuadmitv1.DeniedWorkload{}
	for _, e := range evs {
		last := events.LastSeen(e)
		if !isWorkloadDenial(e) || now.Sub(last) > DeniedWindow {
			continue
		}
		k := key{e.InvolvedObject.APIVersion, e.InvolvedObject.Kind, e.InvolvedObject.Name}
		w := byKey[k]
		if w == nil {
			w = &gpuadmitv1.DeniedWorkload{APIVersion: k.apiVersion, Kind: k.kind, Name: k.name}
			byKey[k] = w
		}
		w.Count = int32(min(int64(w.Count)+int64(max(e.Count, 1)), math.MaxInt32))
		if t := metav1.NewTime(last.Truncate(time.Second)); w.LastDenied.IsZero() || w.LastDenied.Before(&t) {
			w.LastDenied, w.Reason, w.Message = t, e.Reason, boundedMessage(e.Message)
		}
	}
	out := make([]gpuadmitv1.DeniedWorkload, 0, len(byKey))
	for _, w := range byKey {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b gpuadmitv1.DeniedWorkload) int {
		return cmp.Or(b.LastDenied.Compare(a.LastDenied.Time), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	if len(out) > gpuadmitv1.MaxDeniedWorkloads {
		out = out[:gpuadmitv1.MaxDeniedWorkloads]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// isWorkloadDenial reports whether e is a denial's Event about a workload.
func isWorkloadDenial(e *corev1.Event) bool {
	from := cmp.Or(e.ReportingController, e.Source.Component)
	ref := e.InvolvedObject
	_, onOwner := e.Annotations[workloadAnnotation]
	named := func(f string) bool { return f != "" && len(f) <= 253 }
	return from == deniedComponent && slices.Contains(deniedReasons, e.Reason) && !onOwner &&
		ref.APIVersion != "v1" && named(ref.APIVersion) && named(ref.Kind) && named(ref.Name)
}

// sameDenied compares two lists of denied workloads.
func sameDenied(a, b []gpuadmitv1.DeniedWorkload) bool {
	return slices.EqualFunc(a, b, func(x, y gpuadmitv1.DeniedWorkload) bool {
		return x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name && x.LastDenied.Equal(&y.LastDenied) &&
			x.Reason == y.Reason && x.Message == y.Message && x.Count == y.Count
	})
}

// maxDeniedMessage bounds a denied workload's message in bytes (the
// CRD's maxLength: a longer one, from a forged Event, would fail the
// whole status write).
const maxDeniedMessage = 1024

// boundedMessage cuts m to maxDeniedMessage bytes on a rune boundary,
// ending in "...".
func boundedMessage(m string) string {
	const more = "..."
	if len(m) <= maxDeniedMessage {
		return m
	}
	n := maxDeniedMessage - len(more)
	for n > 0 && !utf8.RuneStart(m[n]) {
		n--
	}
	return m[:n] + more
}
