package ledger

import (
	"fmt"
	"runtime"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A list is applied in three steps: what the ledger holds that the list
// lacks is removed; the listed Pods are prepared (derived) on every core,
// which reads no ledger state; then every listed pod is committed in the
// list's order, a batch per lock hold (a relist while deciding lets
// decisions in between). The outcome is that of UpsertPod for each listed
// pod in order (relist_test.go). A cold start's list of 150k pods is
// applied after its stream ended, with nothing else to do: this is the
// time between the end of the stream and the first decision.

// commitBatch is how many pods are committed under one lock hold.
const commitBatch = 4096

// parallelFrom is the smallest count of listed Pods prepared concurrently.
const parallelFrom = 1024

// ReplacePods makes the ledger hold the pods of a list: every pod it holds
// that the list lacks (deleted while the watch was down) is removed, as if
// deleted, and every listed pod is recorded. Each is a *corev1.Pod or the
// *metav1.PartialObjectMetadata of a pod without managed resources
// (PodTransform), read as a pod with only its metadata: the Pod is made
// when it is recorded, not for the whole list at once (a list is mostly
// such pods, and a Pod is five times their size).
func (l *Ledger) ReplacePods(pods []metav1.Object) {
	full := make([]*corev1.Pod, 0, len(pods)/4)
	for _, o := range pods {
		if p, ok := o.(*corev1.Pod); ok {
			full = append(full, p)
		}
	}
	l.forgetUnlisted(pods, len(full))
	ready := l.prepareAll(full)
	// A pod without managed resources is recorded from one Pod holding its
	// metadata, reused: nothing keeps a pod that names no managed resource
	// and no claim.
	var bare corev1.Pod
	next := 0
	for start := 0; start < len(pods); start += commitBatch {
		l.mu.Lock()
		for _, o := range pods[start:min(start+commitBatch, len(pods))] {
			switch p := o.(type) {
			case *corev1.Pod:
				l.commitLocked(ready[next])
				ready[next] = prepared{} // the list's Pods are the only references left
				next++
			case *metav1.PartialObjectMetadata:
				bare.ObjectMeta = p.ObjectMeta
				l.commitLocked(prepared{pod: &bare, uid: podUID(&bare)})
			default:
				l.log.Error(errUnexpected, "pod list", "type", fmt.Sprintf("%T", o))
			}
		}
		l.mu.Unlock()
	}
}

// forgetUnlisted removes what the ledger holds of pods the list lacks, and
// sizes the maps of every pod on the first list (gpu of its pods are Pods:
// GPU pods and pods with claims).
func (l *Ledger) forgetUnlisted(pods []metav1.Object, gpu int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.known) == 0 && len(l.seen) == 0 && len(l.pods) == 0 && len(l.invalid) == 0 {
		// The first list (or a list after every pod was deleted): nothing to
		// remove; the maps of every pod, sized once.
		l.known = make(map[types.UID]struct{}, len(pods))
		l.seen = make(map[types.UID]string, gpu)
		l.pods = make(map[types.UID]*podRecord, gpu)
		if len(l.byName) == 0 {
			l.byName = make(map[podName]types.UID, gpu)
		}
		return
	}
	listed := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		listed[metaUID(p)] = true
	}
	l.removeUnlistedLocked(listed)
	if len(l.known) == 0 {
		l.known = make(map[types.UID]struct{}, len(pods))
	}
}

// removeUnlistedLocked removes every pod that listed lacks, as if deleted.
func (l *Ledger) removeUnlistedLocked(listed map[types.UID]bool) {
	for uid := range l.known {
		if !listed[uid] {
			delete(l.known, uid)
		}
	}
	for uid := range l.seen {
		if !listed[uid] {
			l.removeLocked(uid)
			delete(l.seen, uid)
		}
	}
	for uid := range l.pods { // deleting while ranging over a map is safe
		if !listed[uid] {
			l.removeLocked(uid)
		}
	}
	for uid := range l.invalid {
		if !listed[uid] {
			l.removeLocked(uid)
		}
	}
}

// prepareAll prepares pods, on every core when they are many.
func (l *Ledger) prepareAll(pods []*corev1.Pod) []prepared {
	out := make([]prepared, len(pods))
	workers := min(runtime.GOMAXPROCS(0), len(pods)/parallelFrom)
	if workers < 2 {
		for i, p := range pods {
			out[i] = l.prepare(p)
		}
		return out
	}
	var wg sync.WaitGroup
	chunk := (len(pods) + workers - 1) / workers
	for start := 0; start < len(pods); start += chunk {
		wg.Go(func() {
			for i := start; i < min(start+chunk, len(pods)); i++ {
				out[i] = l.prepare(pods[i])
			}
		})
	}
	wg.Wait()
	return out
}
