package budget

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Users tells who a pod or claim is charged to (the ledger's
// Options.Users).
type Users interface {
	UserOf(pod *corev1.Pod) string
	ClaimUserOf(claim *resourcev1.ResourceClaim) string
}

// Sizes tells, per family, the Compute options (device sizes) the ledger
// charges a pod with: memory percentages and whole devices resolve
// against them (nil: the ledger holds none for it).
type Sizes interface {
	PodSizes(pod *corev1.Pod) map[string]effective.Options
}

// Options configure a Tracker.
type Options struct {
	// Families are the governed device families (the ledger's): a key of
	// spec.hard is a family's count, memory or cores resource name.
	Families []effective.Family
	// Users tells who each pod and claim is charged to (nil: "").
	Users Users
	// Claims tells what the ledger charges each ResourceClaim (nil: no
	// claim burns).
	Claims ClaimCharges
	// Sizes tells the device sizes the ledger resolves each pod's memory
	// percentages and whole devices against (the ledger; nil: none, such
	// memory burns nothing).
	Sizes Sizes
	// Clock stamps the replica's observations (a pod seen running, seen
	// deleted). nil: the real clock.
	Clock clock.PassiveClock
	// Tolerance is budgets.clockTolerance: how far a node may shorten a
	// run below what a replica saw.
	Tolerance time.Duration
	// RollingBuckets is budgets.rollingBuckets (0: 48).
	RollingBuckets int
	// CheckpointInterval is budgets.checkpointInterval (0: 1m): deleted
	// pods' entries are dropped from a checkpoint 10 intervals after they
	// ended.
	CheckpointInterval time.Duration
	// Log receives the specs that cannot be enforced whole.
	Log logr.Logger
}

// Tracker tracks every budget in memory, on every replica: the budgets
// (their spec, and the checkpoint of their status as last seen), the pods
// of their namespaces (fed beside the ledger), and what this replica saw
// of them (when first and last seen running, when deleted). Its methods
// are safe for concurrent use.
type Tracker struct {
	opts  Options
	clock clock.PassiveClock
	log   logr.Logger

	mu      sync.RWMutex
	budgets map[Ref]*tracked
	// namespaces are the labels of the namespaces the namespace watch
	// reported.
	namespaces map[string]map[string]string
	pods       map[types.UID]*podEntry
	// byNS indexes pods (live and deleted) by namespace.
	byNS map[string]map[types.UID]*podEntry
	// byName indexes pods (not claims; live and deleted) by namespace and
	// name: a pod recreated under its name replaces the older one.
	byName map[types.NamespacedName]map[types.UID]*podEntry
	// claimsByNS indexes the claims' entries by namespace.
	claimsByNS map[string]map[types.UID]*podEntry
	// version counts the changes of pods, claims and namespaces;
	// nsVersion those of each namespace's pods and claims (memo.go).
	version   uint64
	nsVersion map[string]uint64
	// tombstones are the entries seen deleted, still held.
	tombstones map[types.UID]*podEntry
	// gone are the pods deleted and folded, with when they were dropped.
	gone map[types.UID]time.Time
	// ended are the entries seen deleted since the last sweep (sweepLocked);
	// lastSweep is when every tombstone was last swept; checks counts the
	// tombstones examined (neededLocked).
	ended     []*podEntry
	lastSweep time.Time
	checks    uint64
}

// Ref names a budget: its kind, namespace ("" for a GPUClusterBudget) and
// name.
type Ref struct {
	Kind, Namespace, Name string
}

// NewTracker returns an empty Tracker.
func NewTracker(opts Options) *Tracker {
	if opts.RollingBuckets <= 0 {
		opts.RollingBuckets = 48
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = time.Minute
	}
	t := &Tracker{opts: opts, clock: opts.Clock, log: opts.Log,
		budgets: map[Ref]*tracked{}, namespaces: map[string]map[string]string{},
		pods: map[types.UID]*podEntry{}, gone: map[types.UID]time.Time{}, tombstones: map[types.UID]*podEntry{}, nsVersion: map[string]uint64{}, claimsByNS: map[string]map[types.UID]*podEntry{}, byNS: map[string]map[types.UID]*podEntry{}, byName: map[types.NamespacedName]map[types.UID]*podEntry{}}
	if t.clock == nil {
		t.clock = clock.RealClock{}
	}
	if t.log.GetSink() == nil {
		t.log = logr.Discard()
	}
	return t
}

// Families are the governed families (what the feed's Sink reports).
func (t *Tracker) Families() []effective.Family { return t.opts.Families }

// PodBurn is what one pod burned in one budget's current window, counted
// as the budget counts it.
type PodBurn struct {
	Budget Ref
	// Kind is "Pod" or "ResourceClaim".
	Kind string
	Name string
	UID  types.UID
	// User is who the pod is charged to (the ledger's user).
	User string
	// Deleted tells a pod this replica saw deleted whose burn is not
	// folded into the budget's checkpoint yet.
	Deleted bool
	Amounts burn.Amounts
}
