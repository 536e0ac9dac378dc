package eval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/setup"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// tenantSource is a dump that was refused the reads forbidden, and whose
// server dry run answers verdict (or err), recording the pods asked.
type tenantSource struct {
	source.Dump
	forbidden []string
	verdict   source.Verdict
	err       error
	asked     []*corev1.Pod
	// whole is the verdict on a workload's own create (nil: allowed);
	// workloads are those asked.
	whole     *source.Verdict
	workloads []string
}

func (s *tenantSource) Forbidden() []string { return s.forbidden }

func (s *tenantSource) DryRunPod(_ context.Context, pod *corev1.Pod) (source.Verdict, error) {
	s.asked = append(s.asked, pod)
	return s.verdict, s.err
}

func (s *tenantSource) DryRunClaim(context.Context, *resourcev1.ResourceClaim) (source.Verdict, error) {
	return s.verdict, s.err
}

func (s *tenantSource) DryRunWorkload(_ context.Context, apiVersion, kind, _ string, _ []byte) (source.Verdict, error) {
	s.workloads = append(s.workloads, apiVersion+" "+kind)
	if s.whole != nil {
		return *s.whole, nil
	}
	return source.Verdict{Allowed: true}, nil
}

// TestWebhookDecidesWhatTheUserCannotRead: with a read refused, eval never
// decides locally: a whole-card Job of three, which the local state (no
// nodes) could not resolve, is decided by the webhook's dry run, one pod
// in the Job's namespace, and said so; the webhook's denial is the
// verdict; without the right to dry-run, an error names both; with every
// read allowed, nothing is dry-run.
func TestWebhookDecidesWhatTheUserCannotRead(t *testing.T) {
	const job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: whole, namespace: team-a}\nspec:\n  parallelism: 3\n  template:\n    spec:\n" +
		"      restartPolicy: Never\n      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
	denial := `namespace "team-a": nvidia.com/gpumem: pod needs 24576 MiB, 24576 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`
	forbiddenErr := &source.DryRunForbiddenError{Resource: "pods", Namespace: "team-a", Err: errors.New(`User "alice" cannot create resource "pods"`)}
	for _, tt := range []struct {
		name          string
		forbidden     []string
		verdict       source.Verdict
		err           error
		wantAllowed   bool
		wantAsked     int
		wantAdmitted  int64
		wantGPUMem    int64
		wantDenials   []string
		wantWarning   string
		wantDecidedBy string
		wantErr       string
	}{
		{name: "nodes refused: the webhook admits one pod of three", forbidden: []string{"list nodes"},
			verdict:     source.Verdict{Allowed: true, Effective: `{"gpu":1,"gpumem":24576,"gpucores":0}`, Warnings: []string{"near the limit"}},
			wantAllowed: true, wantAsked: 1, wantAdmitted: 1, wantGPUMem: 24576,
			wantWarning:   `a server dry run decides one pod: the other pods of Job "whole" are not decided`,
			wantDecidedBy: "decided by the webhook (server dry run), as you may not list nodes"},
		{name: "the webhook denies", forbidden: []string{"list nodes", "get configmap gpuadmit-system/gpuadmit-config"},
			verdict: source.Verdict{Denials: []string{denial}, ByGpuadmit: true}, wantAsked: 1, wantDenials: []string{denial},
			wantDecidedBy: "decided by the webhook (server dry run), as you may not list nodes, get configmap gpuadmit-system/gpuadmit-config"},
		{name: "no right to dry-run: an error naming both", forbidden: []string{"list nodes"}, err: forbiddenErr, wantAsked: 1,
			wantErr: `cannot decide as the webhook does: you may not list nodes, which the webhook reads, and a server dry run needs create on pods in namespace team-a: User "alice" cannot create resource "pods"`},
		{name: "everything read: decided locally", wantAllowed: false, wantDecidedBy: "decided locally"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &tenantSource{Dump: source.Dump{Path: fixtures.State + "idle-a10-quota24g.yaml"}, forbidden: tt.forbidden, verdict: tt.verdict, err: tt.err}
			var warnings []string
			e := Evaluation{Source: src, Warn: func(w string) { warnings = append(warnings, w) }, User: &decision.UserInfo{Username: "alice"},
				Setup: setup.Setup{Cfg: config.Default()}}
			out, _, err := e.Run(t.Context(), cmdline.ManifestFlags{Files: []string{"-"}}, strings.NewReader(job))
			if len(src.asked) != tt.wantAsked || (tt.wantAsked > 0 && src.asked[0].Namespace != "team-a") {
				t.Fatalf("dry runs %d (%v), want %d in team-a", len(src.asked), src.asked, tt.wantAsked)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.decidedBy != tt.wantDecidedBy || len(out.Objects) != 1 {
				t.Fatalf("decided by %q (%d objects), want %q", out.decidedBy, len(out.Objects), tt.wantDecidedBy)
			}
			if tt.wantAsked == 0 {
				return
			}
			o := out.Objects[0]
			if o.Allowed != tt.wantAllowed || out.Allowed != tt.wantAllowed || o.Admitted != tt.wantAdmitted || o.Effective.MemMiB != tt.wantGPUMem ||
				!slices.Equal(o.Denials, append([]string{}, tt.wantDenials...)) {
				t.Errorf("allowed %v, admitted %d, gpumem %d, denials %q; want %v, %d, %d, %q", o.Allowed, o.Admitted, o.Effective.MemMiB, o.Denials,
					tt.wantAllowed, tt.wantAdmitted, tt.wantGPUMem, tt.wantDenials)
			}
			if tt.wantWarning != "" && !slices.ContainsFunc(o.Warnings, func(w string) bool { return strings.Contains(w, tt.wantWarning) }) {
				t.Errorf("warnings %q lack %q", o.Warnings, tt.wantWarning)
			}
		})
	}
}

// TestWebhookChecksTheWorkloadWhole: decided by the webhook, a built-in
// workload's own create is dry-run too, and the workloads webhook's
// verdict on it as a whole comes first; a user who may not create it is
// warned, the pod's verdict kept.
func TestWebhookChecksTheWorkloadWhole(t *testing.T) {
	const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: train, namespace: team-a}\nspec:\n  replicas: 4\n" +
		"  selector: {matchLabels: {app: t}}\n  template:\n    metadata: {labels: {app: t}}\n    spec:\n" +
		"      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 8192}}}]\n"
	whole := "gpuadmit: Deployment team-a/train can never run whole: 4 pods x 8192 MiB = 32768 MiB"
	for _, tt := range []struct {
		name        string
		whole       source.Verdict
		wantAllowed bool
		wantDenials []string
	}{
		{name: "refused as a whole", whole: source.Verdict{Denials: []string{whole}, ByGpuadmit: true}, wantDenials: []string{whole}},
		{name: "allowed as a whole", whole: source.Verdict{Allowed: true}, wantAllowed: true, wantDenials: []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &tenantSource{Dump: source.Dump{Path: fixtures.State + "idle-a10-quota24g.yaml"}, forbidden: []string{"list nodes"},
				verdict: source.Verdict{Allowed: true}, whole: &tt.whole}
			e := Evaluation{Source: src, Warn: func(string) {}, User: &decision.UserInfo{Username: "alice"}, Setup: setup.Setup{Cfg: config.Default()}}
			out, _, err := e.Run(t.Context(), cmdline.ManifestFlags{Files: []string{"-"}}, strings.NewReader(deployment))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(src.workloads, []string{"apps/v1 Deployment"}) {
				t.Fatalf("workloads dry-run %q, want the Deployment", src.workloads)
			}
			if o := out.Objects[0]; o.Allowed != tt.wantAllowed || !slices.Equal(o.Denials, tt.wantDenials) {
				t.Fatalf("allowed %v, denials %q; want %v, %q", o.Allowed, o.Denials, tt.wantAllowed, tt.wantDenials)
			}
		})
	}
}
