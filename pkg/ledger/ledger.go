package ledger

import (
	"errors"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Options configure a Ledger.
type Options struct {
	// Families are the device families whose requests the ledger reads
	// (resource names and booking rules), the nvidia family first.
	Families []effective.Family
	// Claims charges the ResourceClaims of the governed DeviceClasses
	// (nil: no claim is charged).
	Claims *dra.Charger
	// MaxDeviceMemoryMiB is, per family name, the plausibility bound of a
	// device a node announces (the configuration's
	// capacity.maxDeviceMemoryMiB): a device above it is a node problem and
	// sizes no charge. nil, or a result of 0 or less:
	// devices.DefaultMaxDeviceMemoryMiB.
	MaxDeviceMemoryMiB func(family string) int64
	// Log receives problems (invalid pods, malformed annotations, bad quota
	// values). The zero value discards.
	Log logr.Logger
	// Users tells who each pod and claim is charged to (team quotas'
	// per-user limits): asked once, when the ledger first records the
	// object (a later edit never moves a charge). nil: every charge's user
	// is "".
	Users Users
}

// Users tells who an object is charged to: its verified requesting-user
// stamp, else its controller's (or its own) service account
// (*stamp.Stamper).
type Users interface {
	UserOf(pod *corev1.Pod) string
	ClaimUserOf(claim *resourcev1.ResourceClaim) string
}

// Ledger is the usage ledger. All methods are safe for concurrent use.
type Ledger struct {
	families []effective.Family
	// allocs are the pod annotations that assign devices (AllocAnnotations).
	allocs []string
	log    logr.Logger
	// users is Options.Users (nil: none).
	users Users
	// maxMem is Options.MaxDeviceMemoryMiB.
	maxMem func(family string) int64

	mu         sync.RWMutex
	pods       map[types.UID]*podRecord
	invalid    map[types.UID]*invalidPod
	byName     map[podName]types.UID
	namespaces map[string]*namespace
	nodes      map[string]*node
	capacity   *Capacity // built lazily from nodes; nil when stale
	// nodesListed: the node watch's initial list is in (NodesListed).
	// Until then a pending pod's size still rises as nodes arrive (its
	// first resolution is against the whole list, whatever the order of
	// the watches); from then on it keeps what was first resolved.
	nodesListed bool
	// sized are the pods whose demand depends on device sizes (memory
	// percentages, whole devices): re-derived when capacity changes.
	sized map[types.UID]*podRecord
	// seen is the resourceVersion of the last event of each GPU pod.
	seen map[types.UID]string
	// known holds every pod the feed delivered and did not delete, GPU pod
	// or not (a replica proves its view after a pause by finding every
	// listed pod here).
	known map[types.UID]struct{}
	// nsLabels are the labels of every namespace the watch reported
	// (namespace.go); each map is immutable.
	nsLabels map[string]map[string]string
	// nsChanged is closed and replaced when a namespace's labels change
	// (WaitForNamespace).
	nsChanged chan struct{}
	// charger reads claims (claims.go); claims are the recorded ones of
	// governed classes; slices are the ResourceSlices by name, inventory
	// the devices they publish (built lazily; nil when stale), sliceGen
	// counts the changes of slices.
	charger   *dra.Charger
	claims    map[types.UID]*claimRecord
	slices    map[string]*resourcev1.ResourceSlice
	inventory *dra.Inventory
	sliceGen  uint64
	// claimComputed, when set (tests only), runs after UpsertClaim computed
	// a claim's demand and before it applies it: where a slice may change.
	claimComputed func()
	// deviceClasses are the DeviceClasses, slimmed (deviceclasses.go).
	deviceClasses map[string]*resourcev1.DeviceClass
	// templates are the ResourceClaimTemplates (templates.go).
	templates map[podName]*resourcev1.ResourceClaimTemplate
	// claimSeen is seen for claims (a pod relist does not touch it); gone
	// the claims seen deleted lately, oldest first in goneOrder (claims.go).
	claimSeen map[types.UID]string
	gone      map[types.UID]struct{}
	goneOrder []types.UID
	// teams are the GPUClusterQuotas by name (teams.go).
	teams map[string]*teamQuota
}

// podName is a pod's namespace and name (the informer's key).
type podName struct{ namespace, name string }

// New returns an empty ledger.
func New(opts Options) *Ledger {
	l := &Ledger{
		families:   opts.Families,
		allocs:     devices.AllocAnnotations(opts.Families),
		log:        opts.Log,
		users:      opts.Users,
		teams:      map[string]*teamQuota{},
		maxMem:     opts.MaxDeviceMemoryMiB,
		seen:       map[types.UID]string{},
		known:      map[types.UID]struct{}{},
		pods:       map[types.UID]*podRecord{},
		invalid:    map[types.UID]*invalidPod{},
		byName:     map[podName]types.UID{},
		namespaces: map[string]*namespace{},
		nodes:      map[string]*node{},
		sized:      map[types.UID]*podRecord{},
		nsLabels:   map[string]map[string]string{},
		nsChanged:  make(chan struct{}),
		charger:    opts.Claims,
		claims:     map[types.UID]*claimRecord{},
		slices:     map[string]*resourcev1.ResourceSlice{},
		templates:  map[podName]*resourcev1.ResourceClaimTemplate{},
		claimSeen:  map[types.UID]string{},
		gone:       map[types.UID]struct{}{},
	}
	if l.log.GetSink() == nil {
		l.log = logr.Discard()
	}
	return l
}

// Families returns the families the ledger reads requests of.
func (l *Ledger) Families() []effective.Family { return l.families }

// sizedFamily is the family whose device sizes the capacity annotations
// describe (gpuadmit's node agent and HAMi's nvidia register): the first.
func (l *Ledger) sizedFamily() string {
	if len(l.families) == 0 {
		return ""
	}
	return l.families[0].Name
}

// requests reports whether pod names a resource of any family.
func (l *Ledger) requests(pod *corev1.Pod) bool { return effective.RequestsAny(pod, l.families) }

// podUID is the key of a pod: its UID, or namespace/name for objects that
// have none (hand-written manifests).
func podUID(pod *corev1.Pod) types.UID { return metaUID(pod) }

// UpsertPod records the pod's current target (an add, an update, a resync or
// a relist: all the same). The previous record of the pod, and of an older
// pod with the same namespace and name, is replaced; from now on a
// reservation under the pod's UID does not count (Seen).
func (l *Ledger) UpsertPod(pod *corev1.Pod) {
	u := l.prepare(pod) // pure work outside the lock
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commitLocked(u)
}

// prepared is a pod read outside the lock, ready to be recorded.
type prepared struct {
	pod  *corev1.Pod
	uid  types.UID
	d    derivation
	user string
	// gpu: a reservation may be under its UID (a GPU pod's; a pod with
	// templates reserves only its containers' demand; seen all the same).
	gpu bool
}

// prepare reads pod without the lock: it reads no ledger state, so pods
// may be prepared concurrently (relist.go).
func (l *Ledger) prepare(pod *corev1.Pod) prepared {
	u := prepared{pod: pod, uid: podUID(pod), d: l.derive(pod, nil)}
	if u.d.rec != nil && l.users != nil {
		u.user = l.users.UserOf(pod)
	}
	u.gpu = l.requests(pod) || effective.HasTemplateClaim(pod)
	return u
}

// commitLocked records a prepared pod.
func (l *Ledger) commitLocked(u prepared) {
	pod, uid, d := u.pod, u.uid, u.d
	l.known[uid] = struct{}{}
	if u.gpu {
		l.seen[uid] = pod.ResourceVersion
		if l.seen[uid] == "" {
			l.seen[uid] = "0" // a hand-made object: seen, at no known version
		}
	}
	old := l.pods[uid]
	trusted, edited := l.firstAssignment(old, pod)
	switch {
	case d.rec != nil && d.rec.pod != nil:
		d = l.deriveLocked(trusted, old) // the demand depends on device sizes
	case trusted != pod:
		d = l.derive(trusted, nil)
	}
	d.keep(old, trusted, edited, l.allocs)
	if d.rec != nil {
		d.rec.user = u.user // a recorded pod keeps its first (applyLocked)
	}
	key := podName{pod.Namespace, pod.Name}
	if other, ok := l.byName[key]; ok && other != uid {
		// The pod was deleted and recreated while the watch was down: the
		// relist only shows the new one.
		l.removeLocked(other)
		delete(l.seen, other)
		delete(l.known, other)
	}
	l.applyLocked(uid, key, d)
}

// errUnexpected is a watched object of another type than the kind's.
var errUnexpected = errors.New("unexpected object type")

// metaUID is podUID of a pod's metadata.
func metaUID(m metav1.Object) types.UID {
	if uid := m.GetUID(); uid != "" {
		return uid
	}
	return types.UID(m.GetNamespace() + "/" + m.GetName())
}

// Knows reports whether the feed delivered pod uid (a GPU pod or not) and
// not its deletion.
func (l *Ledger) Knows(uid types.UID) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.known[uid]
	return ok
}

// DeletePod removes the pod's record (what is stored, whatever the object
// says).
func (l *Ledger) DeletePod(pod *corev1.Pod) {
	uid := podUID(pod)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(uid)
	delete(l.seen, uid)
	delete(l.known, uid)
}

// DeletePodByName removes the record of the pod with this namespace and name
// (for tombstones that carry only the key).
func (l *Ledger) DeletePodByName(ns, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid, ok := l.byName[podName{ns, name}]; ok {
		l.removeLocked(uid)
		delete(l.seen, uid)
		delete(l.known, uid)
	}
}

// applyLocked replaces whatever is stored for uid with d. Problems are
// logged when they appear or change, not on every event.
func (l *Ledger) applyLocked(uid types.UID, key podName, d derivation) {
	old := l.pods[uid]
	inheritScope(d.rec, old)
	if d.rec != nil && old != nil {
		d.rec.user = old.user // the first record's user: an edit never moves a charge
	}
	if old != nil && d.rec != nil && sameRecord(old, d.rec) {
		return // duplicate event, resync: nothing changed
	}
	before := l.problemOfLocked(uid)
	l.removeLocked(uid)
	switch {
	case d.invalid != nil:
		l.markInvalidLocked(uid, key, d.invalid)
	case d.rec != nil:
		d.rec.uid = uid
		if err := l.chargeLocked(d.rec); err != nil {
			l.markInvalidLocked(uid, key, &Problem{Kind: ProblemPod, Namespace: key.namespace, Name: key.name,
				Message: "not recorded: " + err.Error()})
			break
		}
		l.pods[uid] = d.rec
		l.byName[key] = uid
		if d.rec.warning != nil {
			l.ns(key.namespace).warned[uid] = d.rec
		}
	}
	if after := l.problemOfLocked(uid); after != nil && (before == nil || before.Message != after.Message) {
		l.log.Info("pod GPU usage: problem", "pod", klog.KRef(key.namespace, key.name), "problem", after.Message)
	}
}

// problemOfLocked is the pod's current problem: invalid, or recorded with a warning.
func (l *Ledger) problemOfLocked(uid types.UID) *Problem {
	if inv, ok := l.invalid[uid]; ok {
		return &inv.problem
	}
	if r, ok := l.pods[uid]; ok {
		return r.warning
	}
	return nil
}

// removeLocked subtracts what is stored for uid and forgets it.
func (l *Ledger) removeLocked(uid types.UID) {
	if rec, ok := l.pods[uid]; ok {
		l.unchargeLocked(rec)
		delete(l.pods, uid)
		l.forgetNameLocked(podName{rec.namespace, rec.name}, uid)
		if n := l.namespaces[rec.namespace]; n != nil {
			delete(n.warned, uid)
			l.gcNamespaceLocked(rec.namespace)
		}
	}
	if inv, ok := l.invalid[uid]; ok {
		delete(l.invalid, uid)
		l.forgetNameLocked(podName{inv.problem.Namespace, inv.problem.Name}, uid)
		if n := l.namespaces[inv.problem.Namespace]; n != nil {
			delete(n.invalid, uid)
			l.gcNamespaceLocked(inv.problem.Namespace)
		}
	}
}

func (l *Ledger) forgetNameLocked(key podName, uid types.UID) {
	if l.byName[key] == uid {
		delete(l.byName, key)
	}
}

// invalidPod is a pod recorded as nothing because its GPU request is invalid.
type invalidPod struct {
	problem Problem
}

func (l *Ledger) markInvalidLocked(uid types.UID, key podName, p *Problem) {
	inv := &invalidPod{problem: *p}
	l.invalid[uid] = inv
	l.byName[key] = uid
	l.ns(key.namespace).invalid[uid] = inv
}
