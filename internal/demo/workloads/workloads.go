package workloads

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// The scenario's namespace, its quota (MiB of GPU memory) and example
// files (in the examples directory Play is given).
const (
	TeamB        = "team-b"
	TeamBQuota   = "24576"
	LLMFile      = "scenario5-llm-4x8g.yaml"
	NotebookFile = "scenario5-notebook-4g.yaml"
)

// nvidia is the name of the family the scenario uses.
const nvidia = effective.NvidiaName

// Play runs the fifth scenario in namespace team-b (created with a
// 24576 MiB quota) and prints what it measured: the refusal of
// LLMFile's Deployment as a whole, the same Deployment scaled within the
// quota and its pods, and NotebookFile's Deployment admitted with a
// warning, then explained by `gpuadmit why`. Each figure printed is read
// from the run and checked against what the scenario must show: a
// mismatch is an error, never a printed line. c must run
// kube-controller-manager.
func Play(ctx context.Context, c *local.Cluster, examples string, out io.Writer) error {
	if err := c.Seed(ctx, TeamB, TeamBQuota); err != nil {
		return err
	}
	quota, err := c.WaitLedger(ctx, TeamB, func(s ledger.NamespaceSnapshot) bool { return s.Limits[nvidia].MemMiB != nil })
	if err != nil {
		return err
	}
	p := &play{c: c, limit: quota.Limits[nvidia].MemMiB.Value}
	if p.llm, err = readDeployment(filepath.Join(examples, LLMFile)); err != nil {
		return err
	}
	if p.notebook, err = readDeployment(filepath.Join(examples, NotebookFile)); err != nil {
		return err
	}
	if err := p.refusedWhole(ctx, out); err != nil {
		return fmt.Errorf("scenario 5: %w", err)
	}
	if err := p.scaledWithin(ctx, out); err != nil {
		return fmt.Errorf("scenario 5: %w", err)
	}
	if err := p.explained(ctx, out); err != nil {
		return fmt.Errorf("scenario 5: %w", err)
	}
	return nil
}

// play is what the steps share.
type play struct {
	c             *local.Cluster
	limit         int64
	llm, notebook *deployment
}

// deployment is an example Deployment: its file, the object and one pod's
// GPU memory as gpuadmit computes it.
type deployment struct {
	file   string
	obj    *appsv1.Deployment
	perPod int64
}

func (d *deployment) name() string     { return d.obj.Name }
func (d *deployment) replicas() int64  { return int64(*d.obj.Spec.Replicas) }
func (d *deployment) selector() string { return "app=" + d.obj.Spec.Template.Labels["app"] }

// readDeployment reads a Deployment of team-b with replicas and an app
// label from file and computes one pod's demand.
func readDeployment(file string) (*deployment, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if d.Kind != "Deployment" || d.Namespace != TeamB || d.Spec.Replicas == nil || d.Spec.Template.Labels["app"] == "" {
		return nil, fmt.Errorf("%s: want a Deployment of namespace %s with spec.replicas and an app label on its template", file, TeamB)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace}, Spec: d.Spec.Template.Spec}
	demand, err := effective.Compute(pod, effective.Nvidia(), effective.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &deployment{file: file, obj: &d, perPod: demand.Effective.MemMiB}, nil
}

// refusedWhole: `kubectl apply` of the Deployment past the quota is
// refused, and neither the Deployment nor a pod of it exists.
func (p *play) refusedWhole(ctx context.Context, out io.Writer) error {
	d := p.llm
	whole := d.replicas() * d.perPod
	if whole <= p.limit {
		return fmt.Errorf("%s: %d x %d MiB fits the %d MiB limit: nothing to refuse", d.file, d.replicas(), d.perPod, p.limit)
	}
	stdout, stderr, err := p.c.Kubectl(ctx, nil, "apply", "-f", d.file)
	if err == nil {
		return fmt.Errorf("kubectl apply -f %s was admitted: %s", d.file, strings.TrimSpace(stdout))
	}
	const marker = "denied the request: "
	i := strings.Index(stderr, marker)
	if i < 0 || !strings.Contains(stderr, "can never run whole") {
		return fmt.Errorf("kubectl apply -f %s failed, not as a whole: %s", d.file, strings.TrimSpace(stderr))
	}
	if _, err := p.c.Kube.AppsV1().Deployments(TeamB).Get(ctx, d.name(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("the refused Deployment %s exists (or cannot be read: %w)", d.name(), err)
	}
	if n, err := p.pods(ctx, d); err != nil || n != 0 {
		return fmt.Errorf("%d pods of the refused Deployment %s (%w)", n, d.name(), err)
	}
	fmt.Fprintf(out, "scenario 5: denied deployment %s (%d x %d MiB = %d MiB) at apply, before any pod exists: %s\n",
		d.name(), d.replicas(), d.perPod, whole, strings.TrimSpace(stderr[i+len(marker):]))
	return nil
}

// scaledWithin: the same Deployment at as many replicas as the quota
// holds is admitted without a warning, and the ReplicaSet controller
// creates its pods through the pod webhook until the namespace is full.
func (p *play) scaledWithin(ctx context.Context, out io.Writer) error {
	d := p.llm
	n := p.limit / d.perPod
	if n < 1 || n >= d.replicas() {
		return fmt.Errorf("%s: %d replicas of %d MiB fit the %d MiB limit: not a scale within it", d.file, n, d.perPod, p.limit)
	}
	scaled := d.obj.DeepCopy()
	scaled.Spec.Replicas = ptr.To(int32(n))
	data, err := yaml.Marshal(scaled)
	if err != nil {
		return fmt.Errorf("the Deployment at %d replicas: %w", n, err)
	}
	if _, stderr, err := p.c.Kubectl(ctx, data, "apply", "-f", "-"); err != nil || stderr != "" {
		return fmt.Errorf("kubectl apply of %s at %d replicas: %w: %s", d.name(), n, err, strings.TrimSpace(stderr))
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := p.pods(ctx, d)
		return got == n, err
	}); err != nil {
		return fmt.Errorf("waiting for the ReplicaSet controller's %d pods of %s: %w", n, d.name(), err)
	}
	s, err := p.c.WaitLedger(ctx, TeamB, func(s ledger.NamespaceSnapshot) bool {
		return s.Reservations == 0 && s.Used.Of(nvidia).MemMiB == n*d.perPod
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "scenario 5: allowed deployment %s scaled to %d replicas: the ReplicaSet controller created its %d pods through the pod webhook, %s uses %d of %d MiB\n",
		d.name(), n, n, TeamB, s.Used.Of(nvidia).MemMiB, p.limit)
	return nil
}

// pods counts the pods of d that exist (not being deleted).
func (p *play) pods(ctx context.Context, d *deployment) (int64, error) {
	list, err := p.c.Kube.CoreV1().Pods(TeamB).List(ctx, metav1.ListOptions{LabelSelector: d.selector()})
	if err != nil {
		return 0, fmt.Errorf("listing the pods of %s: %w", d.name(), err)
	}
	var n int64
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}
