package admitqueue

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/pkg/absence"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Reasons a reservation ended (Metrics.Ended).
const (
	EndRecorded = "recorded" // every live replica recorded the pod
	EndAbsent   = "absent"   // a read confirmed the pod does not exist
)

// Causes of a conflicting write (Metrics.Conflict): the winning write
// added a reservation, or only tidied; unknown when the object read after
// the conflict does not say (it was created and its status not written
// yet, or the read failed).
const (
	ConflictAdmission = gpuadmitv1.WriteAdmission
	ConflictTidy      = gpuadmitv1.WriteTidy
	ConflictUnknown   = "unknown"
)

// Reasons a reservation was refused (Metrics.Refused).
const (
	RefusedLimit     = "limit"     // the namespace holds MaxReservations already
	RefusedDuplicate = "duplicate" // the pod's UID is reserved otherwise, or recorded
)

// Options configure a Store.
type Options struct {
	// Replica names this replica: the writer of its reservations.
	Replica string
	// ConfirmAfter: a reservation nobody recorded is first checked this long
	// after this replica first saw it (0: the window derived from the
	// cluster's other validating webhooks, pkg/absence); RecheckMax bounds
	// the backoff after.
	ConfirmAfter, RecheckMax time.Duration
	// OwnWebhookConfiguration names gpuadmit's ValidatingWebhookConfiguration,
	// which the derived window leaves out.
	OwnWebhookConfiguration string
	// ReviewTimeout is a validating review's whole budget
	// (admission.reviewTimeout; 0: unknown): confirmAfter is checked
	// against it (wait.go), loudly.
	ReviewTimeout time.Duration
	// MaxReservations bounds the reservations of one namespace's object
	// (0: no bound); an admission that would add one more is refused.
	MaxReservations int
	// ReadsPerSecond bounds the reads that confirm absence.
	ReadsPerSecond int
	// WorkerIdle is how long a namespace's worker waits for more reviews
	// before it ends (0: one second; see drain).
	WorkerIdle time.Duration
	// Clock tells this replica's time and times its waits: the cleaner's
	// rounds, the backoff after a conflict, the wait for the informer, a
	// worker's idle end, a review's wait for unconfirmed reservations
	// (nil: the wall clock).
	Clock clock.WithTicker
	Log   logr.Logger
	// HoldTimeout bounds how long a gang's hold holds room for pods still
	// missing, from when this replica first saw it, on its clock
	// (admission.gangs.holdTimeout; 0: DefaultHoldTimeout).
	HoldTimeout time.Duration
	// Namespace is gpuadmit's own namespace, which holds the teams'
	// GPUReservationSets (gpuadmitv1.TeamObjectName); LeaveGrace is
	// teams.leaveGrace (0: DefaultLeaveGrace). Both matter only with
	// Parts.Teams.
	Namespace  string
	LeaveGrace time.Duration
	// AnswerBeforeWrite is a benchmark's switch (the ceiling of a create
	// that waits for no write, ceiling.go): honoured only in a test build.
	AnswerBeforeWrite bool
}

// DefaultHoldTimeout is Options.HoldTimeout's when it is 0.
const DefaultHoldTimeout = 5 * time.Minute

// DefaultLeaveGrace is Options.LeaveGrace's when it is 0.
const DefaultLeaveGrace = 10 * time.Minute

// Decider decides one admission (*decision.Decider): the namespace's
// worker hands it the reservations to count in the request.
type Decider interface {
	Decide(ctx context.Context, req decision.Request) (decision.Result, error)
}

// Membership is what the store needs to know of the replicas
// (*membership.Members).
type Membership interface {
	// MinLive is the least pod-watch progress over the live replicas.
	MinLive() (string, bool)
	// Owner names the replica that tidies namespace ns (self: this one).
	Owner(ns string) (addr string, self bool)
	// SuspectSince is when this replica was last paused or cut off (zero:
	// never), on the clock of Now.
	SuspectSince() time.Time
	Now() time.Time
	// Hurry has this replica publish its pod watch's progress soon after
	// it changes, for a while (reservations wait for it).
	Hurry()
}

// PodWatch is this replica's pod watch (*feed.Feed).
type PodWatch interface {
	// PodsResourceVersion is how far it got ("" before it synced).
	PodsResourceVersion() string
	// WaitForPods returns once it got to rv, or with ctx's error.
	WaitForPods(ctx context.Context, rv string) error
}

// Records is what the store asks the ledger (*ledger.Ledger).
type Records interface {
	// Seen is the resourceVersion at which the watch recorded pod uid ("":
	// not recorded).
	Seen(uid types.UID) string
	// Knows reports whether the watch delivered pod uid.
	Knows(uid types.UID) bool
	// Gone reports whether the watch saw claim uid deleted.
	Gone(uid types.UID) bool
}

// Metrics counts what the store does (the server's metrics).
type Metrics interface {
	Refused(reason string)
	Ended(reason string)
	// Conflict counts a write refused because the object changed since it
	// was read, by the cause of the change that won (ConflictAdmission,
	// ConflictTidy, ConflictUnknown). A summary write never makes one: the
	// summary is another object (pkg/summary).
	Conflict(cause string)
	// Wrote is told how long a status write took and how many reviews it
	// reserved for (0: a tidy-only write).
	Wrote(took time.Duration, reviews int)
}

// Parts are what a Store works with.
type Parts struct {
	// Client reads GPUReservationSets and webhook configurations from the
	// informer cache and writes to the API server; API reads from the API
	// server (pods, and GPUReservationSets after a conflict).
	Client  client.Client
	API     client.Reader
	Ledger  Records
	Watch   PodWatch
	Members Membership
	Decider Decider
	// Metrics is optional.
	Metrics Metrics
	// Groups reads the PodGroups (nil: the PodGroup API is not served; a
	// pod naming a PodGroup is then refused). Events records the Warning
	// Event of a gang's hold released (optional).
	Groups PodGroups
	Events Warner
	// Teams are the team quotas (*ledger.Ledger; nil: none, every review
	// is decided against its namespace alone).
	Teams TeamQuotas
}

// Warner records a Warning Event about an object (*events.Recorder).
type Warner interface {
	Warn(ctx context.Context, regarding corev1.ObjectReference, reason, message string)
}

// Store admits GPU pods into the namespaces' GPUReservationSets, and tidies
// them, for one replica. It owns the reservation state of this replica:
// what it wrote that the informer has not delivered (copies), the
// reservations of deleted objects (lost), the absence checks (confirmer) and
// the namespaces proved after a pause (proofs); the objects themselves are
// the truth.
type Store struct {
	client  client.Client
	api     client.Reader
	ledger  Records
	watch   PodWatch
	members Membership
	decider Decider
	metrics Metrics
	opts    Options
	groups  PodGroups
	events  Warner

	queues    queues               // reviews waiting, by namespace (queue.go)
	copies    *reservation.Assumed // objects this replica wrote, until the informer has them
	lost      lost                 // reservations of deleted objects (repair.go)
	confirmer *absence.Confirmer   // absence checks (pkg/absence)
	proofs    proofs               // namespaces proved fresh after a pause (fresh.go)
	holds     holdClock            // when this replica first saw each gang's hold, and its end (gangtidy.go)
	teams     TeamQuotas           // the team quotas (teams.go); nil: none
	lostTeams lost                 // reservations of deleted team objects, by team quota (teamclean.go)
	departs   departClock          // when this replica first saw each departure (departures.go)

	lastWrite atomic.Int64 // how long the last status write took (ns)
}

// NewStore returns a Store; Start runs its cleaner.
func NewStore(p Parts, opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.WorkerIdle <= 0 {
		opts.WorkerIdle = time.Second
	}
	if p.Metrics == nil {
		p.Metrics = noMetrics{}
	}
	if opts.HoldTimeout <= 0 {
		opts.HoldTimeout = DefaultHoldTimeout
	}
	if opts.LeaveGrace <= 0 {
		opts.LeaveGrace = DefaultLeaveGrace
	}
	s := &Store{client: p.Client, api: p.API, ledger: p.Ledger, watch: p.Watch, members: p.Members, decider: p.Decider,
		metrics: p.Metrics, opts: opts, copies: reservation.NewAssumed(), groups: p.Groups, events: p.Events, teams: p.Teams}
	s.queues.init()
	s.lost.init()
	s.lostTeams.init()
	s.departs.init()
	s.confirmer = absence.New(p.API, p.Client, p.Ledger, absence.Options{ConfirmAfter: opts.ConfirmAfter, RecheckMax: opts.RecheckMax,
		OwnWebhookConfiguration: opts.OwnWebhookConfiguration, Clock: opts.Clock, Log: opts.Log})
	s.proofs.init()
	s.holds.init()
	return s
}

// NeedLeaderElection is false: every replica admits and tidies.
func (s *Store) NeedLeaderElection() bool { return false }

type noMetrics struct{}

func (noMetrics) Refused(string)           {}
func (noMetrics) Ended(string)             {}
func (noMetrics) Conflict(string)          {}
func (noMetrics) Wrote(time.Duration, int) {}
