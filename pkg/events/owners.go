package events

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WorkloadAnnotation is set on a denial's Event about a ReplicaSet or a Job
// when the same denial was also recorded on its Deployment or CronJob
// ("Deployment/web"): the summary lists the workload once, under the
// owner, not under each of its ReplicaSets.
const WorkloadAnnotation = "gpuadmit.io/workload"

// The bounds of the owner reads (docs/workloads.md#why-is-my-workload-short).
const (
	// ownerReadTimeout bounds one read of a ReplicaSet or a Job; a read
	// that fails records the denial on the first owner only.
	ownerReadTimeout = 2 * time.Second
	// ownerTTL is how long what a read found is used again: a ReplicaSet
	// that retries its pod every few seconds is read once a minute.
	ownerTTL = time.Minute
	// ownerFailedTTL is how long a failed read is not tried again.
	ownerFailedTTL = 10 * time.Second
	// ownerCacheSize bounds the owners remembered; a full cache is emptied.
	ownerCacheSize = 4096
	// maxMessage is the Event API's own bound on a message, in bytes.
	maxMessage = 1024
)

// workload is the owner a denial is recorded on besides the pod's
// controller: a ReplicaSet's Deployment, a Job's CronJob.
type workload struct {
	ref corev1.ObjectReference
	// via names the pod's controller and its size, for the message.
	via string
}

// ownerEntry is a read remembered: found is false when the controller has
// no owner to walk up to (or the read failed).
type ownerEntry struct {
	w       workload
	found   bool
	expires time.Time
}

// owners walks from a denied pod's controller one step up, through reads
// of a Reader (the API server, uncached), remembered for ownerTTL.
type owners struct {
	reader client.Reader
	clock  clock.PassiveClock
	mu     sync.Mutex
	seen   map[ownerKey]ownerEntry
}

// ownerKey is what a read is remembered under: the whole reference the pod
// named, not its UID alone, so that a pod of another namespace naming the
// same UID (the API server does not check an owner reference's UID) is
// never handed the walk of an object it does not own.
type ownerKey struct {
	namespace, apiVersion, kind, name string
	uid                               types.UID
}

func keyOf(ref corev1.ObjectReference) ownerKey {
	return ownerKey{namespace: ref.Namespace, apiVersion: ref.APIVersion, kind: ref.Kind, name: ref.Name, uid: ref.UID}
}

// walkable reports whether ref is a kind whose owner is walked up to.
func walkable(ref corev1.ObjectReference) bool {
	return ref.Namespace != "" && ref.UID != "" &&
		(ref.APIVersion == "apps/v1" && ref.Kind == "ReplicaSet" || ref.APIVersion == "batch/v1" && ref.Kind == "Job")
}

// workloadOf is the Deployment of ReplicaSet first, or the CronJob of Job
// first, when it has one. first comes from the pod the tenant wrote: the
// object read must have first's UID, or nothing is walked up to.
func (o *owners) workloadOf(ctx context.Context, first corev1.ObjectReference) (workload, bool) {
	if o == nil || o.reader == nil || !walkable(first) {
		return workload{}, false
	}
	now := o.clock.Now()
	o.mu.Lock()
	e, ok := o.seen[keyOf(first)]
	o.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.w, e.found
	}
	w, found, err := o.read(ctx, first)
	ttl := ownerTTL
	if err != nil {
		ttl = ownerFailedTTL
	}
	o.mu.Lock()
	if len(o.seen) >= ownerCacheSize {
		o.seen = map[ownerKey]ownerEntry{}
	}
	o.seen[keyOf(first)] = ownerEntry{w: w, found: found, expires: now.Add(ttl)}
	o.mu.Unlock()
	return w, found
}

// read reads first (bounded by ownerReadTimeout) and returns its
// controller when that is a Deployment (of a ReplicaSet) or a CronJob (of
// a Job). A first that is gone is no error.
func (o *owners) read(ctx context.Context, first corev1.ObjectReference) (workload, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, ownerReadTimeout)
	defer cancel()
	var obj client.Object
	var via func() string
	wantKind, wantAPI := "Deployment", "apps/v1"
	switch first.Kind {
	case "ReplicaSet":
		rs := &appsv1.ReplicaSet{}
		obj, via = rs, func() string {
			return fmt.Sprintf("ReplicaSet %s (%d replicas)", rs.Name, replicasOf(rs.Spec.Replicas))
		}
	default:
		job := &batchv1.Job{}
		obj, via = job, func() string {
			return fmt.Sprintf("Job %s (%d in parallel)", job.Name, replicasOf(job.Spec.Parallelism))
		}
		wantKind, wantAPI = "CronJob", "batch/v1"
	}
	if err := o.reader.Get(ctx, client.ObjectKey{Namespace: first.Namespace, Name: first.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return workload{}, false, nil
		}
		return workload{}, false, fmt.Errorf("reading %s %s/%s: %w", first.Kind, first.Namespace, first.Name, err)
	}
	if obj.GetUID() != first.UID {
		return workload{}, false, nil // another object of that name: the reference is stale or forged
	}
	c := metav1.GetControllerOfNoCopy(obj)
	if c == nil || c.Kind != wantKind || c.APIVersion != wantAPI || !boundedOwner(c) {
		return workload{}, false, nil
	}
	return workload{ref: corev1.ObjectReference{APIVersion: c.APIVersion, Kind: c.Kind, Name: c.Name, UID: c.UID,
		Namespace: first.Namespace}, via: via()}, true, nil
}

// replicasOf is a replica count, 1 when unset (as the API defaults it).
func replicasOf(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// boundedOwner reports whether every field of an owner reference is
// present and of a Kubernetes name's size.
func boundedOwner(o *metav1.OwnerReference) bool {
	for _, f := range []string{o.APIVersion, o.Kind, o.Name, string(o.UID)} {
		if f == "" || len(f) > 253 {
			return false
		}
	}
	return true
}

// cut bounds s to maxMessage bytes, on a rune boundary, ending in "...".
func cut(s string) string {
	const more = "..."
	if len(s) <= maxMessage {
		return s
	}
	n := maxMessage - len(more)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + more
}
