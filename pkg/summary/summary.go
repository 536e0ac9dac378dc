package summary

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Summarizer writes what users read of a namespace's GPUUsage (kubectl get
// gpuusage): per managed resource used, reserved and hard (with the
// ResourceQuota that sets it), the "used/hard" printer columns, and
// conditions naming input gpuadmit cannot use. It runs on the elected
// replica only, writes a namespace's fields only when they changed and at
// most once per MinGap, with a merge patch. The reservations are in the
// namespace's GPUReservationSet, which it never writes, so the admission
// path's writes neither wait for it nor conflict with it.
type Summarizer struct {
	Client client.Client // reads GPUUsage from the informer cache, writes to the API server
	Ledger *ledger.Ledger
	// Reservations are those the namespaces' objects hold (*Store).
	Reservations reservation.Reader
	// Every is how often the ledger is compared with the objects (default
	// 250ms); MinGap the least time between two writes of one namespace
	// (default 1s).
	Every, MinGap time.Duration
	// Clock tells the time and times the rounds (nil: the wall clock).
	Clock clock.WithTicker
	// OnWrite, when set, counts the status writes.
	OnWrite func()
	// Events, when set, records a Warning Event on a ResourceQuota that
	// gpuadmit does not enforce as written, once per problem and term.
	Events Recorder
	// DeniedFrom, when set, is where the denials' Events are watched
	// from (each term of the election) to list each namespace's denied
	// workloads (denied.go); nil leaves the list as it is.
	DeniedFrom kubernetes.Interface
	// Namespace is gpuadmit's own, where the teams' GPUReservationSets
	// are (gcq.<quota name>); "" : the teams' reservations are not read
	// (their status shows only what the ledger recorded).
	Namespace string
	Log       logr.Logger

	last           map[string]time.Time
	lastTeam       map[string]time.Time
	teamListFailed bool
	reported       map[ledger.Problem]bool
	denied         *denials
}

// Start compares and writes until ctx ends; the server runs it on the
// elected replica only, and again each time that replica is elected.
func (s *Summarizer) Start(ctx context.Context) error {
	s.defaults()
	s.last, s.lastTeam, s.reported, s.denied = map[string]time.Time{}, map[string]time.Time{}, nil, nil
	if s.DeniedFrom != nil {
		s.denied = startDenials(ctx, s.DeniedFrom)
	}
	s.Log.Info("elected: writing the GPUUsage summaries")
	t := s.Clock.NewTicker(s.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			s.Round(ctx)
		}
	}
}

// defaults fills in what the Summarizer was not given.
func (s *Summarizer) defaults() {
	if s.Every <= 0 {
		s.Every = 250 * time.Millisecond
	}
	if s.MinGap <= 0 {
		s.MinGap = time.Second
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.last == nil {
		s.last = map[string]time.Time{}
	}
	if s.lastTeam == nil {
		s.lastTeam = map[string]time.Time{}
	}
}

// Round writes every namespace whose summary changed (and whose last write
// is MinGap old), then every GPUClusterQuota's (teams.go); it returns how
// many it wrote.
func (s *Summarizer) Round(ctx context.Context) int {
	s.defaults()
	var list gpuadmitv1.GPUUsageList
	if err := s.Client.List(ctx, &list); err != nil {
		s.Log.Error(err, "listing GPUUsage objects")
		return 0
	}
	existing := make(map[string]*gpuadmitv1.GPUUsage, len(list.Items))
	for i := range list.Items {
		existing[list.Items[i].Namespace] = &list.Items[i]
	}
	pending, err := s.Reservations.Reserved(ctx)
	if err != nil {
		s.Log.Error(err, "listing the reservations")
		return 0
	}
	snap := s.Ledger.Snapshot(pending)
	s.quotaEvents(ctx, snap)
	for ns := range existing { // nothing left in the ledger: zeros
		if _, ok := snap.Namespaces[ns]; !ok {
			snap.Namespaces[ns] = ledger.NamespaceSnapshot{Namespace: ns}
		}
	}
	now := s.Clock.Now()
	wrote := 0
	for ns, n := range snap.Namespaces {
		if s.consider(ctx, existing[ns], n, namespaceUsers(s.Ledger, ns, pending[ns]), now) {
			s.last[ns] = now
			wrote++
		}
	}
	for ns := range s.last {
		if _, ok := snap.Namespaces[ns]; !ok {
			delete(s.last, ns)
		}
	}
	return wrote + s.teamRound(ctx, now)
}

// consider writes the summary of n (and users, the printer cell of its
// users) into u (nil: the namespace has no object yet) when it changed and
// the namespace's last write is MinGap old, and reports whether it wrote.
func (s *Summarizer) consider(ctx context.Context, u *gpuadmitv1.GPUUsage, n ledger.NamespaceSnapshot, users string, now time.Time) bool {
	var old gpuadmitv1.GPUUsageStatus
	if u != nil {
		old = u.Status
	}
	want := summarize(n, s.Ledger.Families(), old.Conditions, now)
	want.DeniedWorkloads, want.Users = old.DeniedWorkloads, users
	if list, ok := s.denied.of(n.Namespace, now); ok {
		want.DeniedWorkloads = list
	}
	if (u != nil && sameSummary(old, want) && old.Users == want.Users && sameDenied(old.DeniedWorkloads, want.DeniedWorkloads)) ||
		now.Sub(s.last[n.Namespace]) < s.MinGap {
		return false
	}
	if err := s.write(ctx, n.Namespace, u, want); err != nil {
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) {
			s.Log.Error(err, "writing the GPUUsage summary", "namespace", n.Namespace)
		}
		return false
	}
	return true
}

// write sets the summary fields of ns's GPUUsage (creating it when there
// is none) with a merge patch: no resourceVersion, so it never conflicts.
func (s *Summarizer) write(ctx context.Context, ns string, u *gpuadmitv1.GPUUsage, want gpuadmitv1.GPUUsageStatus) error {
	if u == nil {
		u = &gpuadmitv1.GPUUsage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gpuadmitv1.ObjectName,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "gpuadmit"}}}
		if err := s.Client.Create(ctx, u); err != nil {
			return err
		}
	}
	next := u.DeepCopy()
	next.Status.Resources, next.Status.Summary, next.Status.Conditions = want.Resources, want.Summary, want.Conditions
	next.Status.DeniedWorkloads, next.Status.Users = want.DeniedWorkloads, want.Users
	if err := s.Client.Status().Patch(ctx, next, client.MergeFrom(u)); err != nil {
		return err
	}
	if s.OnWrite != nil {
		s.OnWrite()
	}
	return nil
}

// summarize computes the summary fields of a namespace; conditions keep
// their lastTransitionTime while their status stays.
func summarize(n ledger.NamespaceSnapshot, fams []effective.Family, conds []metav1.Condition, now time.Time) gpuadmitv1.GPUUsageStatus {
	var st gpuadmitv1.GPUUsageStatus
	var others []string
	for i := range fams {
		f := &fams[i]
		used, reserved, lim := n.Used.Of(f.Name), n.Reserved.Of(f.Name), n.Limits[f.Name]
		if i > 0 && used.IsZero() && reserved.IsZero() && lim == (ledger.Limits{}) {
			continue // a family the namespace neither uses nor limits
		}
		cells := familyResources(&st, f, used, reserved, lim)
		if i == 0 {
			st.Summary.GPU, st.Summary.GPUMem, st.Summary.GPUCores = cells[0], cells[1], cells[2]
			continue
		}
		others = append(others, fmt.Sprintf("%s %s, %s MiB", f.Name, cells[0], cells[1]))
	}
	st.Summary.Families = strings.Join(others, "; ")
	st.Summary.Claims = int32(min(n.Claims, math.MaxInt32))
	st.Conditions = append([]metav1.Condition(nil), conds...)
	quotas, ungoverned, pods, held := problemLists(n.Problems)
	var unresolved []string
	for _, u := range n.Unresolved {
		unresolved = append(unresolved, fmt.Sprintf("%s (containers %s)", u.Pod, strings.Join(u.Containers, ", ")))
	}
	set := func(typ, reasonBad, lead string, bad []string, okMsg string) {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: okMsg, LastTransitionTime: metav1.NewTime(now)}
		if len(bad) > 0 {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, reasonBad, lead+listed(bad)
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	set(gpuadmitv1.ConditionQuotasValid, "InvalidQuotaValue", "ResourceQuota values not enforced as written: ",
		quotas, "every GPU limit is a whole non-negative number")
	set(gpuadmitv1.ConditionQuotasEnforced, ReasonUngovernedQuotaKey,
		"ResourceQuota limits nothing enforces (no device family gpuadmit governs has the resource): ", ungoverned,
		"every GPU limit of the namespace's ResourceQuotas is enforced")
	set(gpuadmitv1.ConditionDemandResolved, "UnresolvedPercentage",
		"pods whose memory is a percentage of a device of unknown size (their memory is not counted): ", unresolved,
		"every pod's demand is resolved")
	set(gpuadmitv1.ConditionPodsValid, "InvalidPods", "pods (or ResourceClaims) whose GPU requests gpuadmit cannot read: ", pods,
		"every GPU pod's requests are valid")
	set(gpuadmitv1.ConditionInputsTrusted, "ChargeHeld",
		"pods still charged what their admission resolved, above what changed annotations or node capacity say (a charge goes down only through a pod's lifecycle): ",
		held, "no device assignment or node capacity changed under an admitted pod")
	var over []string
	for _, o := range ledger.OverLimits(n, fams) {
		over = append(over, o.String())
	}
	set(gpuadmitv1.ConditionWithinLimits, "OverLimit",
		"usage passes a limit lowered under it (admission refuses more until it is back within; nothing is evicted): ", over,
		"usage is within every GPU limit")
	return st
}

// problemLists sorts a namespace's problems into those of quota values,
// of ungoverned quota keys, of pods (and claims) and of held charges.
func problemLists(ps []ledger.Problem) (quotas, ungoverned, pods, held []string) {
	for _, p := range ps {
		switch p.Kind {
		case ledger.ProblemQuota:
			quotas = append(quotas, p.String())
		case ledger.ProblemUngoverned:
			ungoverned = append(ungoverned, p.String())
		case ledger.ProblemPod, ledger.ProblemClaim:
			pods = append(pods, p.String())
		case ledger.ProblemCharge:
			held = append(held, p.String())
		}
	}
	return quotas, ungoverned, pods, held
}

// familyResources appends one family's resources to st.Resources and
// returns its used/hard cells (count, memory, cores).
func familyResources(st *gpuadmitv1.GPUUsageStatus, f *effective.Family, used, reserved effective.Vector, lim ledger.Limits) [3]string {
	cell := func(used int64, l *ledger.Limit) string {
		if l == nil {
			return fmt.Sprintf("%d/-", used)
		}
		return fmt.Sprintf("%d/%d", used, l.Value)
	}
	var cells [3]string
	for i, d := range effective.Dimensions() {
		name, u, l := string(f.Names.Of(d)), used.Get(d), lim.Of(d)
		cells[i] = cell(u, l)
		if name == "" {
			continue // the family has no such resource
		}
		ru := gpuadmitv1.ResourceUsage{Resource: name, Used: u, Reserved: reserved.Get(d)}
		if l != nil {
			ru.Hard, ru.ResourceQuota = &l.Value, l.Quota
		}
		st.Resources = append(st.Resources, ru)
	}
	return cells
}

// listed joins at most five items, saying how many more there are.
func listed(items []string) string {
	if len(items) <= 5 {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:5], "; "), len(items)-5)
}

func sameResource(x, y gpuadmitv1.ResourceUsage) bool {
	return x.Resource == y.Resource && x.Used == y.Used && x.Reserved == y.Reserved && x.ResourceQuota == y.ResourceQuota &&
		ptr.Equal(x.Hard, y.Hard)
}

// sameSummary compares the summary fields (conditions without their times).
func sameSummary(a, b gpuadmitv1.GPUUsageStatus) bool {
	if a.Summary != b.Summary || len(a.Resources) != len(b.Resources) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Resources {
		if !sameResource(a.Resources[i], b.Resources[i]) {
			return false
		}
	}
	for _, c := range b.Conditions {
		o := meta.FindStatusCondition(a.Conditions, c.Type)
		if o == nil || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
			return false
		}
	}
	return true
}
