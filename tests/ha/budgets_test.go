package ha_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// budgetInterval is the checkpoint interval of the budgets tests.
const budgetInterval = time.Second

// TestBudgetCheckpointAcrossLeaders: three replicas on one simulated clock
// (--test-clock-file, advanced an hour at a time); the replica elected
// through gpuadmit-budgets writes a GPUBudget's checkpoint, and only it
// (its writer never changes while it lives); killed right after a pod is
// deleted, another takes over and resumes from the status: the use it
// writes is never above the recount from the pods' own timestamps (less
// the replicas' 5 s skew), and under it by at most one checkpoint interval
// of the deleted pod's burn.
func TestBudgetCheckpointAcrossLeaders(t *testing.T) {
	clockFile := filepath.Join(t.TempDir(), "clock")
	var offset time.Duration
	simulate := func(d time.Duration) {
		offset = d
		if err := os.WriteFile(clockFile, []byte(d.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	simulate(0)
	c := startHAWith(t, func(o *replicas.Options) {
		o.Config = replicas.QuickConfig + "budgets: {checkpointInterval: 1s}\n"
		o.Args = func(i int) []string { return append(skewed(i), testhooks.ClockFile(clockFile)) }
	})
	k := fastClient(t, c)
	const ns = "budgets"
	seed(t, c, ns, 1<<20)
	if _, stderr, err := c.Kubectl(t.Context(), []byte(`apiVersion: gpuadmit.io/v1alpha1
kind: GPUBudget
metadata: {name: hours, namespace: budgets}
spec:
  window: {calendar: Monthly}
  hard: {nvidia.com/gpu: "1000"}
`), "apply", "-f", "-"); err != nil {
		t.Fatalf("creating the budget: %v: %s", err, stderr)
	}
	starts := map[string]time.Time{}
	for _, name := range []string{"p1", "p2"} {
		starts[name] = runPod(t, k, ns, name)
	}
	simulate(time.Hour)
	first := waitCheckpoint(t, c, ns, time.Now().Add(offset), "")
	writers := watchWriters(t, c, ns, 3*time.Second)
	if len(writers) != 1 || writers[0] != first.Writer {
		t.Fatalf("checkpoint writers %v within one lease, want only %s", writers, first.Writer)
	}
	checkUse(t, first, starts, nil)
	d0 := time.Now().Add(offset)
	if err := k.CoreV1().Pods(ns).Delete(t.Context(), "p2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d1 := time.Now().Add(offset)
	leader := slices.IndexFunc(c.Replicas, func(r *replicas.Replica) bool { return r.Name == first.Writer })
	if leader < 0 {
		t.Fatalf("writer %q is no replica", first.Writer)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	simulate(2 * time.Hour)
	next := waitCheckpoint(t, c, ns, time.Now().Add(offset), first.Writer)
	checkUse(t, next, starts, &deleted{name: "p2", from: d0, to: d1})
	if w := watchWriters(t, c, ns, 3*time.Second); len(w) != 1 || w[0] != next.Writer {
		t.Fatalf("checkpoint writers %v after the takeover, want only %s", w, next.Writer)
	}
}

// runPod creates a one-device pod and writes its status as a kubelet
// would: running since now (the simulated clock is at its start).
func runPod(t *testing.T, k kubernetes.Interface, ns, name string) time.Time {
	t.Helper()
	p, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, name, "", 1024), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Truncate(time.Second)
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.example/app:1", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
	if _, err := k.CoreV1().Pods(ns).UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return started
}

// checkpointSeen is a budget's status as a test reads it.
type checkpointSeen struct {
	Writer   string
	Time     time.Time
	UsedMsec int64 // device-milliseconds, rounded down to the milli-hour
}

func readBudget(t *testing.T, c *replicas.Cluster, ns string) (checkpointSeen, bool) {
	t.Helper()
	out, _, err := c.Kubectl(t.Context(), nil, "get", "gpubudget", "hours", "-n", ns, "-o", "json")
	if err != nil {
		return checkpointSeen{}, false
	}
	var b gpuadmitv1.GPUBudget
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.Status.Checkpoint == nil {
		return checkpointSeen{}, false
	}
	seen := checkpointSeen{Writer: b.Status.Checkpoint.Writer, Time: b.Status.Checkpoint.Time.Time}
	for _, r := range b.Status.Resources {
		if r.Resource == "nvidia.com/gpu" {
			seen.UsedMsec = r.Used.MilliValue() * 3600
		}
	}
	return seen, true
}

// waitCheckpoint waits for a checkpoint at or after at (less the skew)
// by a writer other than not.
func waitCheckpoint(t *testing.T, c *replicas.Cluster, ns string, at time.Time, not string) checkpointSeen {
	t.Helper()
	var got checkpointSeen
	waitForState(t, fmt.Sprintf("a checkpoint at %v by a writer other than %q", at, not), func() (bool, string) {
		seen, ok := readBudget(t, c, ns)
		got = seen
		return ok && seen.Writer != not && !seen.Time.Before(at.Add(-10*time.Second)), fmt.Sprintf("%+v", seen)
	})
	return got
}

// watchWriters lists the checkpoint writers seen for d.
func watchWriters(t *testing.T, c *replicas.Cluster, ns string, d time.Duration) []string {
	t.Helper()
	var out []string
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if seen, ok := readBudget(t, c, ns); ok && !slices.Contains(out, seen.Writer) {
			out = append(out, seen.Writer)
		}
	}
	return out
}

// deleted is a pod deleted between from and to (simulated time).
type deleted struct {
	name     string
	from, to time.Time
}

// checkUse compares a checkpoint's use with the recount from the pods'
// timestamps at its time: never above (but for the replicas' 5 s clock
// skew and a deletion's uncertainty), at most one interval of the deleted
// pod's burn below (and the milli-hour the status rounds to).
func checkUse(t *testing.T, seen checkpointSeen, starts map[string]time.Time, gone *deleted) {
	t.Helper()
	var low, high int64
	for name, s := range starts {
		end, endHigh := seen.Time, seen.Time
		if gone != nil && gone.name == name {
			end, endHigh = gone.from, gone.to
		}
		low += end.Sub(s).Milliseconds()
		high += endHigh.Sub(s).Milliseconds()
	}
	slack := (5 * time.Second).Milliseconds()
	if seen.UsedMsec > high+slack {
		t.Errorf("checkpoint by %s at %v: used %d device-ms, above the recount %d (+%d skew)", seen.Writer, seen.Time, seen.UsedMsec, high, slack)
	}
	if seen.UsedMsec < low-budgetInterval.Milliseconds()-3600-slack {
		t.Errorf("checkpoint by %s at %v: used %d device-ms, more than one interval below the recount %d", seen.Writer, seen.Time, seen.UsedMsec, low)
	}
}
