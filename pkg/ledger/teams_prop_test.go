package ledger

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// teamWorld is the objects the team property test drives the ledger with,
// and what a recount over them says.
type teamWorld struct {
	rng    *rand.Rand
	labels map[string]string // namespace: its team label ("": none)
	quotas map[string]*gpuadmitv1.GPUClusterQuota
	pods   map[string]*worldPod // by namespace/name
	// ghosts are reservations of pods never recorded (each counts); the
	// check hands in a reservation of every pod of the world besides (a
	// recorded pod's never counts, a deleted one's does).
	ghosts []reservation.Reservation
	gone   []reservation.Reservation
	seq    int
}

type worldPod struct {
	pod *corev1.Pod
	// first is the user the pod was created with (its charge's, whatever
	// its annotation says later); done: it finished (charges nothing).
	first string
	gpus  int64
	done  bool
}

var (
	worldNamespaces = []string{"ns0", "ns1", "ns2", "ns3", "ns4"}
	worldUsers      = []string{"alice", "bob", "system:serviceaccount:kube-system:job-controller"}
	worldTeams      = []string{"a", "b", ""}
)

func (w *teamWorld) pick(s []string) string { return s[w.rng.IntN(len(s))] }

// step applies one random change to the world and the ledger.
func (w *teamWorld) step(l *Ledger) string {
	switch op := w.rng.IntN(10); {
	case op < 3:
		w.seq++
		ns, user, n := w.pick(worldNamespaces), w.pick(worldUsers), int64(1+w.rng.IntN(3))
		p := &worldPod{pod: userPod(ns, fmt.Sprint("p", w.seq), user, n), first: user, gpus: n}
		w.pods[ns+"/"+p.pod.Name] = p
		l.UpsertPod(p.pod)
		return "create " + ns + "/" + p.pod.Name + " of " + user
	case op >= 3 && op <= 4 && len(w.pods) > 0:
		key := w.pick(slices.Sorted(maps.Keys(w.pods)))
		p := w.pods[key]
		l.DeletePod(p.pod)
		delete(w.pods, key)
		// Its reservation, were one still handed in, counts again (the
		// admission queue ends it once it confirms the pod's absence).
		w.gone = append(w.gone, reservation.Reservation{UID: p.pod.UID, Name: p.pod.Name + "-gone", Namespace: p.pod.Namespace,
			User: p.first, Demand: effective.UsageOf(nvidia, vec(p.gpus, p.gpus*1024, 0))})
		if len(w.gone) > 20 {
			w.gone = w.gone[1:]
		}
		return "delete " + key
	case op == 5 && len(w.pods) > 0:
		p := w.pods[w.pick(slices.Sorted(maps.Keys(w.pods)))]
		edited := p.pod.DeepCopy()
		edited.Annotations[userAnnotation] = w.pick(worldUsers) // an edit never moves the charge
		edited.ResourceVersion += "1"
		if w.rng.IntN(2) == 0 && !p.done {
			edited = testpod.New(edited.Name).NS(edited.Namespace).UID(string(edited.UID)).RV(edited.ResourceVersion).
				Annotate(userAnnotation, edited.Annotations[userAnnotation]).App("c", gpu(p.gpus), mem(1024)).Phase(corev1.PodSucceeded).Build()
			p.done = true
		}
		p.pod = edited
		l.UpsertPod(edited)
		return "edit " + edited.Namespace + "/" + edited.Name
	case op == 6:
		ns, lbl := w.pick(worldNamespaces), w.pick(worldTeams)
		w.labels[ns] = lbl
		l.UpsertNamespace(testns.New(ns, map[string]string{"team": lbl}))
		return "label " + ns + " team=" + lbl
	case op == 7:
		name := w.pick([]string{"q0", "q1", "q2"})
		var names []string
		for _, ns := range worldNamespaces {
			if w.rng.IntN(4) == 0 {
				names = append(names, ns)
			}
		}
		q := team(name, w.pick(worldTeams), map[string]string{"limits.nvidia.com/gpu": "8"}, map[string]string{"limits.nvidia.com/gpu": "2"}, names...)
		w.quotas[name] = q
		l.UpsertClusterQuota(q)
		return "quota " + name
	case op == 8 && w.rng.IntN(2) == 0:
		w.seq++
		ns, user, n := w.pick(worldNamespaces), w.pick(worldUsers), int64(1+w.rng.IntN(3))
		w.ghosts = append(w.ghosts, reservation.Reservation{UID: k8stypes.UID(fmt.Sprint("ghost", w.seq)), Name: fmt.Sprint("ghost", w.seq),
			Namespace: ns, User: user, Demand: effective.UsageOf(nvidia, vec(n, n*1024, 0)), Unconfirmed: w.rng.IntN(2) == 0})
		if len(w.ghosts) > 20 {
			w.ghosts = w.ghosts[1:] // its pod appeared, or its absence was confirmed
		}
		return "ghost in " + ns
	case op == 8:
		name := w.pick([]string{"q0", "q1", "q2"})
		delete(w.quotas, name)
		l.DeleteClusterQuota(name)
		return "delete quota " + name
	default: // a relist: the objects as they are now
		objs := make([]metav1.Object, 0, len(w.pods))
		for _, p := range w.pods {
			objs = append(objs, p.pod)
		}
		l.ReplacePods(objs)
		return "relist"
	}
}

// selected is the recount of the namespaces q selects.
func (w *teamWorld) selected(q *gpuadmitv1.GPUClusterQuota) []string {
	var out []string
	for _, ns := range worldNamespaces {
		lbl, known := w.labels[ns]
		sel := q.Spec.NamespaceSelector != nil && known && lbl == q.Spec.NamespaceSelector.MatchLabels["team"]
		if sel || slices.Contains(q.Spec.Namespaces, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// recount is the GPUs of the live pods of members, and of user's.
func (w *teamWorld) recount(members []string, user string) (team, mine int64) {
	for _, p := range w.pods {
		if p.done || !slices.Contains(members, p.pod.Namespace) {
			continue
		}
		team += p.gpus
		if p.first == user {
			mine += p.gpus
		}
	}
	return team, mine
}

// pending is every reservation the check hands in: the ghosts, the
// deleted pods', and one under each pod of the world (recorded: never
// counted).
func (w *teamWorld) pending() []reservation.Reservation {
	out := slices.Concat(w.ghosts, w.gone)
	for _, p := range w.pods {
		out = append(out, reservation.Reservation{UID: p.pod.UID, Name: p.pod.Name, Namespace: p.pod.Namespace, User: p.first,
			Demand: effective.UsageOf(nvidia, vec(p.gpus, p.gpus*1024, 0))})
	}
	return out
}

// reserved is the recount of what pending adds: the ghosts' and the
// deleted pods', and user's part.
func (w *teamWorld) reserved(user string) (all, mine int64) {
	for _, r := range slices.Concat(w.ghosts, w.gone) {
		g := r.Demand.Of(nvidia).GPU
		all += g
		if r.User == user {
			mine += g
		}
	}
	return all, mine
}

// check compares the ledger's team views with the recount.
func (w *teamWorld) check(l *Ledger) error {
	for _, ns := range worldNamespaces {
		var want []string
		for _, name := range slices.Sorted(maps.Keys(w.quotas)) {
			if slices.Contains(w.selected(w.quotas[name]), ns) {
				want = append(want, name)
			}
		}
		var got []string
		for _, q := range l.TeamsOf(ns) {
			got = append(got, q.Name)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("TeamsOf(%s) = %v, recount %v", ns, got, want)
		}
	}
	for name, q := range w.quotas {
		members := l.Selected(name)
		if want := w.selected(q); !slices.Equal(members, want) {
			return fmt.Errorf("Selected(%s) = %v, recount %v", name, members, want)
		}
		tq, _ := l.ClusterQuota(name)
		pending := w.pending()
		var sumUsers int64
		for _, u := range worldUsers {
			s := l.Team(tq, members, pending, u)
			team, mine := w.recount(members, u)
			if all, own := w.reserved(u); s.Reserved.Of(nvidia).GPU != all || s.UserReserved.Of(nvidia).GPU != own {
				return fmt.Errorf("team %s, user %s: reserved %v (user's %v), recount %d (%d)", name, u, s.Reserved, s.UserReserved, all, own)
			}
			if got := s.Used.Of(nvidia); got.GPU != team || got.MemMiB != team*1024 {
				return fmt.Errorf("team %s over %v: used %v, recount %d GPUs", name, members, got, team)
			}
			if got := s.UserUsed.Of(nvidia).GPU; got != mine {
				return fmt.Errorf("team %s, user %s: used %d GPUs, recount %d", name, u, got, mine)
			}
			sumUsers += mine
		}
		if team, _ := w.recount(members, ""); sumUsers != team {
			return fmt.Errorf("team %s: users' usage sums to %d, the team's is %d", name, sumUsers, team)
		}
	}
	return nil
}

// TestTeamLedgerEqualsRecount drives the ledger with random pods (each of
// a user, some edited to name another user, some finishing), namespaces
// relabelled, team quotas created, changed and deleted, and relists, and
// checks after every step that the teams each namespace counts, each
// team's namespaces, and each team's and each user's usage equal a
// recount over the objects (a charge stays with its pod's first user), the
// reservations handed in counting only where no pod is recorded.
func TestTeamLedgerEqualsRecount(t *testing.T) {
	steps := 2000
	if testing.Short() {
		steps = 400
	}
	for _, seed := range modelSeeds(t) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			w := &teamWorld{rng: rand.New(rand.NewPCG(seed, 46)), labels: map[string]string{},
				quotas: map[string]*gpuadmitv1.GPUClusterQuota{}, pods: map[string]*worldPod{}}
			l := newTeamLedger(t)
			for i := range steps {
				op := w.step(l)
				if err := w.check(l); err != nil {
					t.Fatalf("seed %d, step %d (%s): %v", seed, i, op, err)
				}
			}
		})
	}
}
