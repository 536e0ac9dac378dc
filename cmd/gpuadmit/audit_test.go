package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAuditCommand(t *testing.T) {
	lowered := stateOf(quotaDoc("team-a", "gpu-quota", `limits.nvidia.com/gpumem: "8192", limits.nvidia.com/gpu: "1"`),
		quotaDoc("team-b", "gpu-quota", `limits.nvidia.com/gpucores: "50"`),
		podDoc("team-a", "big", "node1", 1, 6144, 0), podDoc("team-a", "small", "", 1, 4096, 0),
		podDoc("team-b", "fits", "", 1, 1, 50), podDoc("free", "unlimited", "", 8, 1<<20, 100))
	tests := []cliCase{
		{name: "none over: a line says so, exit 0",
			args: []string{"audit", "--state", topSeed}, wantText: "no namespace is over its GPU limits (1 checked)\n"},
		{name: "a quota lowered under use: each limit passed, exit 1; at a limit exactly and without a limit is not over",
			args: []string{"audit", "--state", "-"}, stdin: lowered, wantCode: 1,
			wantText: `NAMESPACE   RESOURCE            USED    RESERVED   LIMIT   QUOTA
team-a      nvidia.com/gpu      2       0          1       gpu-quota
team-a      nvidia.com/gpumem   10240   0          8192    gpu-quota
`},
		{name: "-o json: the stable shape, exit 1",
			args: []string{"audit", "--state", "-", "-o", "json"}, stdin: lowered, wantCode: 1,
			wantOut: `{"over":[
				{"namespace":"team-a","family":"nvidia","resource":"nvidia.com/gpu","used":2,"reserved":0,"charged":2,"limit":1,"quota":"gpu-quota","key":"limits.nvidia.com/gpu"},
				{"namespace":"team-a","family":"nvidia","resource":"nvidia.com/gpumem","used":10240,"reserved":0,"charged":10240,"limit":8192,"quota":"gpu-quota","key":"limits.nvidia.com/gpumem"}],
				"namespaces":3}`},
		{name: "-o json, none over: an empty list, exit 0",
			args: []string{"audit", "--state", topSeed, "-o", "json"}, wantOut: `{"over":[],"namespaces":1}`},
		{name: "-o yaml", args: []string{"audit", "--state", topSeed, "-o", "yaml"}, wantText: "namespaces: 1\nover: []\n"},
		{name: "-n: that namespace alone", args: []string{"audit", "--state", "-", "-n", "team-b"}, stdin: lowered,
			wantText: "namespace team-b is within its GPU limits\n"},
		{name: "-n of a namespace the state lacks: within", args: []string{"audit", "--state", topSeed, "-n", "nope"},
			wantText: "namespace nope is within its GPU limits\n"},
		{name: "-A wins over -n", args: []string{"audit", "--state", "-", "-n", "team-b", "-A", "-o", "jsonpath={.over[*].namespace}"}, stdin: lowered,
			wantCode: 1, wantText: "team-a team-a"},
		{name: "an invalid quota value blocks, is a warning, not an overage",
			args:     []string{"audit", "--state", "-"},
			stdin:    stateOf(quotaDoc("ns", "q", `limits.nvidia.com/gpu: "1500m"`), podDoc("ns", "p", "", 1, 1, 0)),
			wantText: "no namespace is over its GPU limits (1 checked)\n", wantErrSub: `gpuadmit audit: warning: quota ns/q: limits.nvidia.com/gpu "1500m": must be a whole number`},
		{name: "no wide table", args: []string{"audit", "--state", topSeed, "-o", "wide"}, wantCode: 2,
			wantErrSub: `gpuadmit audit: --output "wide" is not a format this command prints: allowed formats are table, json, yaml, jsonpath=TEMPLATE`},
		{name: "no argument", args: []string{"audit", "team-a"}, wantCode: 2, wantErrSub: `gpuadmit audit: unexpected argument "team-a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// reservingAPI is fakeAPI with a ResourceQuota in team-a (1024 MiB) and
// team-a's GPUReservationSet reserving 1 GPU and 2048 MiB for a pod admitted and
// not recorded yet.
func reservingAPI(f *fakeAPI) http.Handler {
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
	srv := httptest.NewServer(reservingAPI(&fakeAPI{}))
	t.Cleanup(srv.Close)
	kc := kubeconfig(t, srv.URL, "team-a")
	line := "configuration: the defaults (no ConfigMap gpuadmit-system/gpuadmit-config; is gpuadmit installed in another namespace? --gpuadmit-namespace)\n"
	row := "team-a      0      0+1/-   -      0+2048/1024   200%      0/-        -           nvidia.com/gpumem\n"
	tests := []cliCase{
		{name: "top, the context's namespace", args: []string{"top", "--kubeconfig", kc}, wantTextSub: []string{row}, wantErrSub: "gpuadmit top: " + line},
		{name: "top -A", args: []string{"top", "--kubeconfig", kc, "-A", "--fail-over"}, wantCode: 1, wantTextSub: []string{row}, wantErr: "gpuadmit top: " + line},
		{name: "audit: every namespace", args: []string{"audit", "--kubeconfig", kc}, wantCode: 1,
			wantText: "NAMESPACE   RESOURCE            USED   RESERVED   LIMIT   QUOTA\nteam-a      nvidia.com/gpumem   0      2048       1024    q\n",
			wantErr:  "gpuadmit audit: " + line},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
