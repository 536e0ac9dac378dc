package app_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestWhyCommandLine: why names one workload of a kind it reads, KIND/NAME
// or KIND NAME; anything else is bad input (exit 2) saying what it takes;
// a workload the cluster does not have is an error naming it and the
// namespace (exit 2), not a report.
func TestWhyCommandLine(t *testing.T) {
	api := &fixtures.FakeAPI{Namespaces: []string{"team-x"}}
	kc := fixtures.StartFakeAPI(t, api, "team-x")
	tests := []apptest.Case{
		{Name: "no workload", Args: []string{"why", "--kubeconfig", kc}, WantCode: 2, WantErrSub: "want one workload, KIND/NAME"},
		{Name: "no kind", Args: []string{"why", "web", "--kubeconfig", kc}, WantCode: 2, WantErrSub: `"web": want KIND/NAME, e.g. deployment/web`},
		{Name: "a kind why does not read", Args: []string{"why", "pod/web", "--kubeconfig", kc}, WantCode: 2,
			WantErrSub: `"pod" is not a workload kind why reads: deployment, replicaset, statefulset, job or cronjob`},
		{Name: "no name", Args: []string{"why", "deploy/", "--kubeconfig", kc}, WantCode: 2, WantErrSub: "deploy/: the name is missing"},
		{Name: "a format why does not print", Args: []string{"why", "sts/db", "--kubeconfig", kc, "-o", "wide"}, WantCode: 2,
			WantErrSub: `--output "wide" is not a format this command prints`},
		{Name: "not in the cluster", Args: []string{"why", "deployment.apps/web", "--kubeconfig", kc, "-o", "json"}, WantCode: 2,
			WantErrSub: `deployment "web" not found in namespace team-x`},
		{Name: "KIND NAME, -n", Args: []string{"why", "cj", "nightly", "--kubeconfig", kc, "-n", "team-x"}, WantCode: 2,
			WantErrSub: `cronjob "nightly" not found in namespace team-x`},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
