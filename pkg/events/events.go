package events

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Source is the component the denials' Events name as their source
// (and reporting controller); the host is the replica's name.
const Source = "gpuadmit-webhook"

// The bounds of the denials' Events, per replica (docs/webhook.md#events).
const (
	// eventsQPS and eventsBurst bound the Event writes on a client of
	// their own: a flood of denials never spends the rate of the other
	// clients (certificates, policies, Leases).
	eventsQPS   = 10
	eventsBurst = 25
	// eventsFlushTimeout bounds how long a stopping server waits for the
	// Events already recorded to be written.
	eventsFlushTimeout = 2 * time.Second
)

// eventCorrelation says how the broadcaster's EventCorrelator filters and
// folds the Events, as the API server's own components do (client-go's
// defaults, written out): 25 Events about one object, then one every 5
// minutes; the same Event again raises the count of the first; from the
// 10th distinct message of one reason about one object within 10 minutes,
// they are combined into one Event whose count grows. Each cache holds
// 4096 keys (least recently used dropped).
func eventCorrelation() record.CorrelatorOptions {
	return record.CorrelatorOptions{LRUCacheSize: 4096, BurstSize: 25, QPS: 1. / 300, MaxEvents: 10, MaxIntervalInSeconds: 600}
}

// Recorder records the validating handlers' denials (their
// admission.Recorder): a
// client-go EventBroadcaster writing Warning Events through a sink of the
// API server, asynchronously (a recorded Event is queued, or dropped when
// 1000 wait), between Start and Stop; before Start and after Stop a
// denial records nothing.
type Recorder struct {
	kube   kubernetes.Interface
	source corev1.EventSource
	log    logr.Logger
	owners *owners

	// mu guards the running broadcaster: Denied records under the read
	// lock, so that Stop never shuts down a broadcaster being recorded to.
	mu          sync.RWMutex
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorderLogger
	sink        *flushSink
}

// New builds the Recorder of replica, writing through kube.
func New(kube kubernetes.Interface, replica string, log logr.Logger) *Recorder {
	return &Recorder{kube: kube, source: corev1.EventSource{Component: Source, Host: replica}, log: log}
}

// NewForConfig builds the Recorder of replica on a client of its own, made
// from cfg, bounded by eventsQPS and eventsBurst.
func NewForConfig(cfg *rest.Config, replica string, log logr.Logger) (*Recorder, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = eventsQPS, eventsBurst, nil
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for Events: %w", err)
	}
	return New(kube, replica, log), nil
}

// WithOwners makes the Recorder walk from a denied pod's ReplicaSet to its
// Deployment and from its Job to its CronJob, reading them through r (the
// API server; each read bounded and remembered a minute), clk telling the
// time (nil: the wall clock). Call it before Start.
func (e *Recorder) WithOwners(r client.Reader, clk clock.PassiveClock) *Recorder {
	if clk == nil {
		clk = clock.RealClock{}
	}
	e.owners = &owners{reader: r, clock: clk, seen: map[ownerKey]ownerEntry{}}
	return e
}

// Denied implements admission.Recorder: a Warning Event about regarding,
// in its namespace; and, when regarding is a ReplicaSet of a Deployment or
// a Job of a CronJob (WithOwners), one about that workload too, with the
// same reason, its message naming regarding and its size ("ReplicaSet
// web-7d9f (4 replicas): pod team-a/web-7d9f-x denied: ..."), the first
// Event annotated with WorkloadAnnotation. It may wait for one read of
// regarding (ownerReadTimeout; a failed read records the first Event
// only), never for the API server's Events: the broadcaster drops an Event
// its queue cannot take (logged with ctx's logger).
func (e *Recorder) Denied(ctx context.Context, regarding corev1.ObjectReference, reason, message string) {
	w, walked := e.owners.workloadOf(ctx, regarding)
	e.mu.RLock()
	defer e.mu.RUnlock()
	log := logf.FromContext(ctx)
	if e.recorder == nil {
		log.V(1).Info("the denial's Event is not recorded: the server is not running", "reason", reason)
		return
	}
	rec := e.recorder.WithLogger(log)
	if !walked {
		rec.Event(&regarding, corev1.EventTypeWarning, reason, message)
		return
	}
	rec.AnnotatedEventf(&regarding, map[string]string{WorkloadAnnotation: w.ref.Kind + "/" + w.ref.Name},
		corev1.EventTypeWarning, reason, "%s", message)
	rec.Event(&w.ref, corev1.EventTypeWarning, reason, cut(w.via+": "+message))
}

// Warn records a Warning Event about regarding that is not a denial (a
// ResourceQuota gpuadmit does not enforce as written: pkg/summary), never
// walking to an owner.
func (e *Recorder) Warn(ctx context.Context, regarding corev1.ObjectReference, reason, message string) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.recorder != nil {
		e.recorder.WithLogger(logf.FromContext(ctx)).Event(&regarding, corev1.EventTypeWarning, reason, message)
	}
}

// Start starts the broadcaster and its sink (once).
func (e *Recorder) Start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster != nil {
		return
	}
	// A context without cancellation: the broadcaster lives until Stop,
	// after the webhook server answered its last review; the sink logs
	// with e.log.
	e.broadcaster = record.NewBroadcaster(record.WithCorrelatorOptions(eventCorrelation()),
		record.WithContext(klog.NewContext(context.Background(), e.log)))
	e.sink = &flushSink{EventSink: &typedcorev1.EventSinkImpl{Interface: e.kube.CoreV1().Events("")}, marks: map[types.UID]chan struct{}{}}
	e.broadcaster.StartRecordingToSink(e.sink)
	e.recorder = e.broadcaster.NewRecorder(clientgoscheme.Scheme, e.source)
}

// Stop stops recording, waits up to eventsFlushTimeout for what was
// recorded to be written, and shuts the broadcaster down.
func (e *Recorder) Stop() {
	e.mu.Lock()
	b, rec, sink := e.broadcaster, e.recorder, e.sink
	e.broadcaster, e.recorder, e.sink = nil, nil, nil
	e.mu.Unlock()
	if b == nil {
		return
	}
	if !sink.flush(rec, eventsFlushTimeout) {
		e.log.Info("stopping before every denial's Event was written", "waited", eventsFlushTimeout)
	}
	b.Shutdown()
}

// flushKind is the kind of the marks a flush records: never written.
const flushKind = "gpuadmit.io/EventsFlush"

// flushSink is the broadcaster's sink: the API server's Events, and the
// flush marks, which it does not write. The broadcaster hands the recorded
// Events to the sink one at a time, in order (retries included), so once a
// mark reached it every Event recorded before was written or given up.
type flushSink struct {
	record.EventSink
	mu    sync.Mutex
	n     int
	marks map[types.UID]chan struct{}
}

func (s *flushSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	if ev.InvolvedObject.Kind != flushKind {
		return s.EventSink.Create(ev) // unwrapped: the broadcaster tells the API server's errors apart
	}
	s.mu.Lock()
	done, ok := s.marks[ev.InvolvedObject.UID]
	delete(s.marks, ev.InvolvedObject.UID)
	s.mu.Unlock()
	if ok {
		close(done)
	}
	return ev, nil
}

// flush records a mark through rec and reports whether it reached the
// sink within timeout. A mark is a new object to the correlator (its own
// UID), so it is neither filtered nor folded into another Event.
func (s *flushSink) flush(rec record.EventRecorder, timeout time.Duration) bool {
	s.mu.Lock()
	s.n++
	uid := types.UID(fmt.Sprintf("flush-%d", s.n))
	done := make(chan struct{})
	s.marks[uid] = done
	s.mu.Unlock()
	rec.Event(&corev1.ObjectReference{Kind: flushKind, Name: "flush", UID: uid}, corev1.EventTypeNormal, "Flush", "")
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// LastSeen is when an Event last happened: its last timestamp, its
// series' last observation, its event time or its first timestamp, the
// first of them set (what `gpuadmit why` and the denied-workloads summary
// order the denials by).
func LastSeen(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}
