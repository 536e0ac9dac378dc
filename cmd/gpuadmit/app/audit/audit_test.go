package audit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

func TestAuditCommand(t *testing.T) {
	lowered := fixtures.StateOf(fixtures.QuotaDoc("team-a", "gpu-quota", `limits.nvidia.com/gpumem: "8192", limits.nvidia.com/gpu: "1"`),
		fixtures.QuotaDoc("team-b", "gpu-quota", `limits.nvidia.com/gpucores: "50"`),
		fixtures.PodDoc("team-a", "big", "node1", 1, 6144, 0), fixtures.PodDoc("team-a", "small", "", 1, 4096, 0),
		fixtures.PodDoc("team-b", "fits", "", 1, 1, 50), fixtures.PodDoc("free", "unlimited", "", 8, 1<<20, 100))
	tests := []apptest.Case{
		{Name: "none over: a line says so, exit 0",
			Args: []string{"audit", "--state", fixtures.TopSeed}, WantText: "no namespace is over its GPU limits (1 checked)\n"},
		{Name: "a quota lowered under use: each limit passed, exit 1; at a limit exactly and without a limit is not over",
			Args: []string{"audit", "--state", "-"}, Stdin: lowered, WantCode: 1,
			WantText: `NAMESPACE   RESOURCE            USED    RESERVED   LIMIT   QUOTA
team-a      nvidia.com/gpu      2       0          1       gpu-quota
team-a      nvidia.com/gpumem   10240   0          8192    gpu-quota
`},
		{Name: "-o json: the stable shape, exit 1",
			Args: []string{"audit", "--state", "-", "-o", "json"}, Stdin: lowered, WantCode: 1,
			WantOut: `{"over":[
				{"namespace":"team-a","family":"nvidia","resource":"nvidia.com/gpu","used":2,"reserved":0,"charged":2,"limit":1,"quota":"gpu-quota","key":"limits.nvidia.com/gpu"},
				{"namespace":"team-a","family":"nvidia","resource":"nvidia.com/gpumem","used":10240,"reserved":0,"charged":10240,"limit":8192,"quota":"gpu-quota","key":"limits.nvidia.com/gpumem"}],
				"namespaces":{"free":{"over":[]},"team-a":{"over":[
				{"namespace":"team-a","family":"nvidia","resource":"nvidia.com/gpu","used":2,"reserved":0,"charged":2,"limit":1,"quota":"gpu-quota","key":"limits.nvidia.com/gpu"},
				{"namespace":"team-a","family":"nvidia","resource":"nvidia.com/gpumem","used":10240,"reserved":0,"charged":10240,"limit":8192,"quota":"gpu-quota","key":"limits.nvidia.com/gpumem"}]},
				"team-b":{"over":[]}}}`},
		{Name: "-o json, none over: an empty list, exit 0",
			Args: []string{"audit", "--state", fixtures.TopSeed, "-o", "json"}, WantOut: `{"over":[],"namespaces":{"team-a":{"over":[]}}}`},
		{Name: "-o yaml", Args: []string{"audit", "--state", fixtures.TopSeed, "-o", "yaml"}, WantText: "namespaces:\n  team-a:\n    over: []\nover: []\n"},
		{Name: "-n: that namespace alone", Args: []string{"audit", "--state", "-", "-n", "team-b"}, Stdin: lowered,
			WantText: "namespace team-b is within its GPU limits\n"},
		{Name: "-n of a namespace the state lacks: an error, not within its limits", Args: []string{"audit", "--state", fixtures.TopSeed, "-n", "tema-a"},
			WantCode: 2, WantErrSub: `gpuadmit audit: namespace "tema-a" not found: ` + fixtures.TopSeed +
				" holds no Namespace, Pod, ResourceQuota or ResourceClaim of it\n\nDid you mean this?\n\tteam-a\n"},
		{Name: "-A wins over -n", Args: []string{"audit", "--state", "-", "-n", "team-b", "-A", "-o", "jsonpath={.over[*].namespace}"}, Stdin: lowered,
			WantCode: 1, WantText: "team-a team-a"},
		{Name: "a quota value that is not whole is a warning, shown as written, enforced rounded down: over it",
			Args: []string{"audit", "--state", "-"}, WantCode: 1,
			Stdin:       fixtures.StateOf(fixtures.QuotaDoc("ns", "q", `limits.nvidia.com/gpu: "1.5"`), fixtures.PodDoc("ns", "p", "", 2, 1, 0)),
			WantTextSub: []string{"ns          nvidia.com/gpu   2      0          1       q\n"},
			WantErrSub:  `gpuadmit audit: warning: quota ns/q: limits.nvidia.com/gpu "1.5": not a whole number: enforced as 1 (rounded down, never more than written)`},
		{Name: "no wide table", Args: []string{"audit", "--state", fixtures.TopSeed, "-o", "wide"}, WantCode: 2,
			WantErrSub: `gpuadmit audit: --output "wide" is not a format this command prints: allowed formats are table, json, yaml, jsonpath=TEMPLATE`},
		{Name: "no argument", Args: []string{"audit", "team-a"}, WantCode: 2, WantErrSub: `gpuadmit audit: unexpected argument "team-a"`},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

// reservingAPI is fakeAPI with a ResourceQuota in team-a (1024 MiB) and
// team-a's GPUReservationSet reserving 1 GPU and 2048 MiB for a pod admitted and
// not recorded yet.
func reservingAPI(f *fixtures.FakeAPI) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/resourcequotas", "/api/v1/namespaces/team-a/resourcequotas":
			fmt.Fprint(w, `{"kind":"ResourceQuotaList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[
				{"metadata":{"name":"q","namespace":"team-a"},"spec":{"hard":{"limits.nvidia.com/gpumem":"1024"}}}]}`)
		case "/apis/gpuadmit.io/v1alpha1/namespaces/team-a/gpureservationsets/usage":
			fmt.Fprint(w, `{"apiVersion":"gpuadmit.io/v1alpha1","kind":"GPUReservationSet","metadata":{"name":"usage","namespace":"team-a"},
				"status":{"reservations":[{"podUID":"u1","podName":"admitted","demand":{"gpu":1,"gpumem":2048,"gpucores":0},
				"writer":"replica-1","admittedAt":"2026-01-01T00:00:00Z"}]}}`)
		default:
			f.ServeHTTP(w, r)
		}
	})
}

// TestReservationsLive: reading the cluster, top and audit count the
// GPUReservationSet reservations of the namespaces shown, every namespace's too.
func TestReservationsLive(t *testing.T) {
	srv := httptest.NewServer(reservingAPI(&fixtures.FakeAPI{Namespaces: []string{"team-a"}}))
	t.Cleanup(srv.Close)
	kc := fixtures.Kubeconfig(t, srv.URL, "team-a")
	line := "configuration: the defaults (no ConfigMap gpuadmit-system/gpuadmit-config; is gpuadmit installed in another namespace? --gpuadmit-namespace)\n"
	row := "team-a      0      0+1/-   -      0+2048/1024   200%      0/-        -           nvidia.com/gpumem\n"
	tests := []apptest.Case{
		{Name: "top, the context's namespace", Args: []string{"top", "--kubeconfig", kc}, WantTextSub: []string{row}, WantErrSub: "gpuadmit top: " + line},
		{Name: "top -A", Args: []string{"top", "--kubeconfig", kc, "-A", "--fail-over"}, WantCode: 1, WantTextSub: []string{row}, WantErr: "gpuadmit top: " + line},
		{Name: "audit: every namespace", Args: []string{"audit", "--kubeconfig", kc}, WantCode: 1,
			WantText: "NAMESPACE   RESOURCE            USED   RESERVED   LIMIT   QUOTA\nteam-a      nvidia.com/gpumem   0      2048       1024    q\n",
			WantErr:  "gpuadmit audit: " + line},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
