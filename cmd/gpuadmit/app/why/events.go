package why

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/pkg/events"
)

// The denials' Events gpuadmit records (its webhook's component and
// reasons, docs/webhook.md#events).
const deniedComponent = events.Source

var deniedReasons = []string{"GPUQuotaExceeded", "GPUPolicyDenied"}

// denial is the last denial the Events tell of: when, why, on which
// object (the workload, or the ReplicaSet or Job its pods belong to), and
// how many denials the workload's Events counted (at least: Events are
// folded and rate-limited).
type denial struct {
	Time    metav1.Time `json:"time"`
	On      string      `json:"on"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Count   int32       `json:"count"`
}

// lastDenial reads the denials' Events of ns about w or its owners.
func lastDenial(ctx context.Context, kc kubernetes.Interface, w *workload) (*denial, error) {
	list, err := kc.CoreV1().Events(w.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reportingComponent", deniedComponent).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the Events of namespace %s: %w", w.Namespace, err)
	}
	self := w.Kind + "/" + w.Name
	about := map[string]bool{self: true}
	for _, o := range w.owners {
		about[o] = true
	}
	var last *denial
	var own, others int32
	for i := range list.Items {
		e := &list.Items[i]
		on := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
		if cmp.Or(e.ReportingController, e.Source.Component) != deniedComponent || !slices.Contains(deniedReasons, e.Reason) || !about[on] {
			continue
		}
		if on == self {
			own += max(e.Count, 1)
		} else {
			others += max(e.Count, 1)
		}
		if t := events.LastSeen(e); last == nil || t.After(last.Time.Time) || t.Equal(last.Time.Time) && on == self {
			last = &denial{Time: metav1.NewTime(t), On: on, Reason: e.Reason, Message: e.Message}
		}
	}
	if last != nil {
		last.Count = own
		if own == 0 { // nothing recorded on the workload itself: its ReplicaSets' or Jobs'
			last.Count = others
		}
	}
	return last, nil
}
