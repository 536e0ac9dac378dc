package ha_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// The team: GPUClusterQuota "ml" selects the namespaces labelled team=ml,
// 20 GiB of device memory together; each namespace has a ResourceQuota of
// its own far larger.
const (
	teamLimitMiB = 20 * 1024
	teamCreates  = 100
	teamClients  = 16
	teamGrace    = 15 * time.Second
)

var teamNamespaces = []string{"ml-0", "ml-1", "ml-2", "ml-3"}

func teamYAML(limitMiB int) []byte {
	return fmt.Appendf(nil, `apiVersion: gpuadmit.io/v1alpha1
kind: GPUClusterQuota
metadata: {name: ml}
spec:
  namespaceSelector: {matchLabels: {team: ml}}
  hard: {limits.nvidia.com/gpumem: "%d"}
`, limitMiB)
}

// TestTeamBurstAcrossReplicas: three replicas (deciding each on its own:
// no forwarding), 100 concurrent creates of 1 GiB spread over the four
// namespaces of team "ml" (20 GiB): the live pods of the team never pass
// 20 GiB, sampled throughout, while mid-burst a replica is killed (and
// started again), the team quota is deleted and re-created, and ml-3 is
// relabelled out of the team; after the burst ml-3's pods still fill the
// team on every replica until teams.leaveGrace passed.
func TestTeamBurstAcrossReplicas(t *testing.T) {
	c := startHAWith(t, func(o *replicas.Options) {
		o.Args = func(i int) []string { return append(skewed(i), "--advertise-address=") }
		o.Config = replicas.QuickConfig + fmt.Sprintf("teams: {leaveGrace: %s}\n", teamGrace)
	})
	k := fastClient(t, c)
	for _, ns := range teamNamespaces {
		seed(t, c, ns, 1<<20)
		relabel(t, k, ns, "ml")
	}
	applyTeam(t, c)
	for i := range c.Replicas {
		if err := teamSeen(t.Context(), c, k, i); err != nil {
			t.Fatal(err)
		}
	}
	waitForState(t, "the team's object lists its four namespaces", func() (bool, string) {
		out, _, _ := c.Kubectl(t.Context(), nil, "get", "gpureservationsets", "-n", local.Namespace, "gcq.ml", "-o", "jsonpath={.status.members}")
		return strings.Count(out, "ml-") == 4, out
	})

	stop, peak := sampleTeam(t, k)
	tl := teamBurst(t, c, k)
	stop()
	pods, perNS := teamPods(t, k)
	t.Logf("%s; %d live pods (%v), at most %d seen at once", tl, pods, perNS, peak.Load())
	if peak.Load() > teamLimitMiB/1024 || pods > teamLimitMiB/1024 || tl.Admitted.Load() != int64(pods) || len(tl.Other) > 0 {
		t.Fatalf("over the team's limit, or other failures %q", tl.Other)
	}
	if tl.Unavailable.Load() > teamClients {
		t.Fatalf("%d refused for unavailability, more than the %d reviews in flight when the replica was killed: %q", tl.Unavailable.Load(), teamClients, tl.Why)
	}
	if perNS["ml-3"] == 0 {
		t.Fatal("no pod of ml-3 was admitted before it left the team: nothing to keep charged")
	}
	departedStaysCharged(t, c, k, perNS)
}

// teamBurst makes the creates (ns i%4), from teamClients goroutines, and
// mid-burst kills replica-1 (create 25), pauses the creates (waiting for
// those in flight), starts replica-1 again, deletes and re-creates the
// team quota and waits until every replica decides against it (create 50),
// and relabels ml-3 out of the team (create 75).
func teamBurst(t *testing.T, c *replicas.Cluster, k kubernetes.Interface) *creates.Tally {
	var tl creates.Tally
	var gate sync.RWMutex // held for writing while the quota is re-created
	var next atomic.Int64
	var wg sync.WaitGroup
	for range teamClients {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < teamCreates; i = int(next.Add(1)) - 1 {
				switch i {
				case 25:
					if err := c.Kill(1); err != nil {
						t.Error(err)
					}
				case 50:
					gate.Lock()
					if err := recreateTeam(t.Context(), c, k); err != nil {
						t.Error(err)
					}
					gate.Unlock()
				case 75:
					if err := setTeamLabel(t.Context(), k, "ml-3", "other"); err != nil {
						t.Error(err)
					}
				}
				ns := teamNamespaces[i%len(teamNamespaces)]
				gate.RLock()
				_, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, fmt.Sprintf("p-%03d", i), "", 1024), metav1.CreateOptions{})
				gate.RUnlock()
				tl.Record(err)
			}
		})
	}
	wg.Wait()
	return &tl
}

// recreateTeam starts replica-1 again, deletes the team quota, creates it
// again, and waits until every replica denies what only the team limits.
func recreateTeam(ctx context.Context, c *replicas.Cluster, k kubernetes.Interface) error {
	if err := c.StartReplica(1); err != nil {
		return err
	}
	if err := c.WaitReady(ctx, 1); err != nil {
		return err
	}
	if _, stderr, err := c.Kubectl(ctx, nil, "delete", "gpuclusterquota", "ml"); err != nil {
		return fmt.Errorf("deleting the team quota: %w: %s", err, stderr)
	}
	if _, stderr, err := c.Kubectl(ctx, teamYAML(teamLimitMiB), "apply", "-f", "-"); err != nil {
		return fmt.Errorf("re-creating the team quota: %w: %s", err, stderr)
	}
	for i := range c.Replicas {
		if err := teamSeen(ctx, c, k, i); err != nil {
			return err
		}
	}
	return nil
}

// teamSeen waits until replica i denies, naming the team quota, a dry run
// of one pod asking more than the team's limit (less than a namespace's
// own quota and the node's device): it decides against the team.
func teamSeen(ctx context.Context, c *replicas.Cluster, k kubernetes.Interface, i int) error {
	return probe(ctx, c, k, i, "ml-0", teamLimitMiB+1024, true)
}

// probe waits (a minute at most) until replica i (pinned) answers a dry
// run of one pod of mem MiB in ns: denied naming GPUClusterQuota "ml"
// (denied true), or admitted.
func probe(ctx context.Context, c *replicas.Cluster, k kubernetes.Interface, i int, ns string, mem int64, denied bool) error {
	c.Proxy.Pin(i)
	c.Proxy.Reset()
	defer func() { c.Proxy.Pin(-1); c.Proxy.Reset() }()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, "probe", "", mem), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		byTeam := err != nil && strings.Contains(err.Error(), "GPUClusterQuota") && strings.Contains(err.Error(), "ml")
		if denied == byTeam && (denied || err == nil) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica-%d never answered a %d MiB pod in %s as wanted (denied by the team: %v); last answer: %s", i, mem, ns, denied, fmt.Sprint(err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// departedStaysCharged: once the team's reservations drained, every
// replica still counts ml-3's pods for the team (a pod that fits only
// without them is denied in ml-0), until teams.leaveGrace passed (then
// every replica admits it).
func departedStaysCharged(t *testing.T, c *replicas.Cluster, k kubernetes.Interface, perNS map[string]int) {
	t.Helper()
	waitForState(t, "the team's reservations drained and ml-3 is a departure", func() (bool, string) {
		out, _, _ := c.Kubectl(t.Context(), nil, "get", "gpureservationsets", "-n", local.Namespace, "gcq.ml", "-o",
			"jsonpath={.status.reservationCount}/{.status.departures[*].namespace}")
		return out == "/ml-3" || out == "0/ml-3", out
	})
	others := perNS["ml-0"] + perNS["ml-1"] + perNS["ml-2"]
	fits := int64(teamLimitMiB - others*1024) // fits only if ml-3's pods are not counted
	for i := range c.Replicas {
		if err := probe(t.Context(), c, k, i, "ml-0", fits, true); err != nil {
			t.Fatalf("ml-3 left the team and its pods stopped counting at once: %v", err)
		}
	}
	time.Sleep(teamGrace)
	for i := range c.Replicas {
		if err := probe(t.Context(), c, k, i, "ml-0", fits, false); err != nil {
			t.Fatalf("after teams.leaveGrace: %v", err)
		}
	}
}

// sampleTeam counts the team's live pods every 50 ms until stop is
// called; peak is the most seen at once.
func sampleTeam(t *testing.T, k kubernetes.Interface) (stop func(), peak *atomic.Int64) {
	peak = &atomic.Int64{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if n, _ := teamPods(t, k); int64(n) > peak.Load() {
				peak.Store(int64(n))
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return func() { close(done); wg.Wait() }, peak
}

// teamPods counts the live pods of the team's four namespaces (each asks
// 1 GiB), in all and by namespace.
func teamPods(t *testing.T, k kubernetes.Interface) (int, map[string]int) {
	per := map[string]int{}
	total := 0
	for _, ns := range teamNamespaces {
		pods, err := k.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Error(err)
			continue
		}
		per[ns] = len(pods.Items)
		total += len(pods.Items)
	}
	return total, per
}

func applyTeam(t *testing.T, c *replicas.Cluster) {
	t.Helper()
	if _, stderr, err := c.Kubectl(t.Context(), teamYAML(teamLimitMiB), "apply", "-f", "-"); err != nil {
		t.Fatalf("creating the team quota: %v: %s", err, stderr)
	}
}

func relabel(t *testing.T, k kubernetes.Interface, ns, team string) {
	t.Helper()
	if err := setTeamLabel(t.Context(), k, ns, team); err != nil {
		t.Fatal(err)
	}
}

// setTeamLabel sets namespace ns's team label.
func setTeamLabel(ctx context.Context, k kubernetes.Interface, ns, team string) error {
	n, err := k.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["team"] = team
	_, err = k.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
	return err
}
