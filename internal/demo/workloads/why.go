package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// whyReport is the part of `gpuadmit why -o json` the scenario checks.
type whyReport struct {
	Desired, Existing, Missing int32
	LastDenial                 *struct{ Reason, Message string }
	Short                      []struct {
		Resource      string
		Needed, Short int64
		Quota         string
	}
}

// explained: the notebook fits the quota but not what is left of it, so
// `kubectl apply` admits it with a warning that its pod will wait; the
// ReplicaSet controller's pod is refused, and `gpuadmit why
// deployment/notebook` says so: 1 wanted, none exists, the last denial,
// and the GPU memory to free or raise under the namespace's quota.
func (p *play) explained(ctx context.Context, out io.Writer) error {
	d := p.notebook
	_, stderr, err := p.c.Kubectl(ctx, nil, "apply", "-f", d.file)
	if err != nil {
		return fmt.Errorf("kubectl apply -f %s was refused: %s", d.file, strings.TrimSpace(stderr))
	}
	warning := waitingWarning(stderr)
	if warning == "" {
		return fmt.Errorf("kubectl apply -f %s warned of no waiting pod: %q", d.file, stderr)
	}
	fmt.Fprintf(out, "scenario 5: allowed deployment %s (%d x %d MiB) with a warning: %s\n", d.name(), d.replicas(), d.perPod, warning)
	target := "deployment/" + d.name()
	r, err := p.awaitRefused(ctx, d, target)
	if err != nil {
		return err
	}
	if s := r.Short[0]; s.Resource != "nvidia.com/gpumem" || s.Needed != d.replicas()*d.perPod || s.Short <= 0 || s.Quota == "" {
		return fmt.Errorf("gpuadmit why %s: short %+v, want %d MiB of nvidia.com/gpumem under a quota", target, s, d.replicas()*d.perPod)
	}
	table, stderr, code := p.why(ctx, target)
	if want := "Last denial: "; code != 1 || !strings.Contains(table, want) || !strings.Contains(table, r.LastDenial.Reason) {
		return fmt.Errorf("gpuadmit why %s: exit %d (want 1, short), the table lacks %q and %s: %s%s", target, code, want, r.LastDenial.Reason, table, stderr)
	}
	fmt.Fprintf(out, "$ gpuadmit why %s -n %s\n%s", target, TeamB, table)
	return nil
}

// waitingWarning is kubectl's warning (on stderr) that pods will wait ("":
// none).
func waitingWarning(stderr string) string {
	for line := range strings.Lines(stderr) {
		if w, ok := strings.CutPrefix(strings.TrimSpace(line), "Warning: "); ok && strings.Contains(w, "will wait") {
			return w
		}
	}
	return ""
}

// awaitRefused runs `gpuadmit why target -o json` until it shows d's pods
// missing, a denial recorded and a limit they are short of.
func (p *play) awaitRefused(ctx context.Context, d *deployment, target string) (whyReport, error) {
	var r whyReport
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		stdout, _, _ := p.why(ctx, target, "-o", "json")
		r = whyReport{}
		if json.Unmarshal([]byte(stdout), &r) != nil {
			return false, nil
		}
		return r.LastDenial != nil && r.Missing == int32(d.replicas()) && len(r.Short) > 0, nil
	})
	if err != nil {
		return r, fmt.Errorf("gpuadmit why %s -o json never showed the refused pod: %+v: %w", target, r, err)
	}
	return r, nil
}

// why runs `gpuadmit why` in process against the cluster, in team-b, and
// returns what it printed and its exit code.
func (p *play) why(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	args = append([]string{"why"}, append(args, "-n", TeamB, "--kubeconfig", p.c.Kubeconfig)...)
	code = app.Run(ctx, cmdline.Build{Version: "demo"}, "gpuadmit", args,
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e})
	return o.String(), e.String(), code
}
