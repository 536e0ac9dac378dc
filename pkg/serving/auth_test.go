package serving_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/certs"
	"github.com/gpuadmit/gpuadmit/pkg/serving"
)

// TestClientAuthentication: with a client CA, only the API server's
// certificate (that CA, an accepted common name) and the replicas' own
// certificate complete the handshake; a connection without one, or with
// another, fails before any handler runs, and is counted. Without a client
// CA, anyone connects.
func TestClientAuthentication(t *testing.T) {
	tests := []struct {
		name    string
		clients bool // client authentication on (common name kube-apiserver)
		cert    clientCert
		want    string // "" for a 200, else a substring of the error
	}{
		{name: "off: no certificate", cert: noCert},
		{name: "off: any certificate", cert: signedBy("someone", true)},
		{name: "on: no certificate", clients: true, cert: noCert, want: "certificate"},
		{name: "on: the API server's certificate", clients: true, cert: signedBy("kube-apiserver", false)},
		{name: "on: another common name of the client CA", clients: true, cert: signedBy("system:node:n1", false), want: "certificate"},
		{name: "on: the right name from another CA", clients: true, cert: signedBy("kube-apiserver", true), want: "certificate"},
		{name: "on: the replicas' certificate", clients: true, cert: replicaCert},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []option
			if tt.clients {
				opts = append(opts, withClientCA("kube-apiserver"))
			}
			f := start(t, nil, opts...)
			status, body, err := f.post(f.httpClient(tt.cert(f), ""), "/validate", `{"a":1}`, nil)
			switch {
			case tt.want == "" && (err != nil || status != 200):
				t.Fatalf("status %d %q, error %v; want 200", status, body, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("status %d %q, error %v; want a handshake error naming %q", status, body, err, tt.want)
			case tt.want != "" && refused(t, f, "client-certificate") == 0:
				t.Error("the refusal was not counted")
			}
		})
	}
}

// TestForwardedHeaderOnlyFromReplicas: the header that marks a review one
// replica forwarded to another is refused (403, before the handler) from
// any client but one presenting the replicas' own certificate.
func TestForwardedHeaderOnlyFromReplicas(t *testing.T) {
	f := start(t, nil)
	header := map[string]string{peerHeader: "1"}
	for _, tt := range []struct {
		name   string
		cert   clientCert
		status int
		body   string
	}{
		{"no certificate", noCert, 403, "accepted only from a replica"},
		{"a certificate of another CA", signedBy("gpuadmit-webhook", true), 403, "accepted only from a replica"},
		{"the replicas' certificate", replicaCert, 200, "replica=true"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body, err := f.post(f.httpClient(tt.cert(f), ""), "/validate", "{}", header)
			if err != nil || status != tt.status || !strings.Contains(body, tt.body) {
				t.Fatalf("status %d %q, error %v; want %d %q", status, body, err, tt.status, tt.body)
			}
		})
	}
	if got := refused(t, f, "not-replica"); got != 2 {
		t.Errorf("refused not-replica = %v, want 2", got)
	}
}

// TestClientCAReloaded: the client CA file is read again at each tick of
// the server's clock. A file that no longer parses is reported and keeps
// the CA loaded before; a new CA written to the file is reported as
// reloaded at the next tick, and from then on its certificates are accepted
// and the replaced CA's refused. The clock is fake: each reload round is
// one step, and the test waits for the round's own report.
func TestClientCAReloaded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	reports := make(chan string, 16)
	f := start(t, nil, withClientCA("kube-apiserver"), func(o *serving.Options, _ *fixture) {
		o.Clients.ReloadEvery = 10 * time.Second
		o.Clock = clk
		o.Log = funcr.New(func(_, args string) {
			if strings.Contains(args, "client CA") {
				reports <- args
			}
		}, funcr.Options{})
	})
	next, err := certs.Generate([]string{"next-ca"}, nil, time.Now(), time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	old := signedBy("kube-apiserver", false)(f)
	if err := os.WriteFile(f.caFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	reloadRound(t, clk, reports, "client CA not reloaded")
	if status, _, err := f.post(f.httpClient(old, ""), "/", "", nil); err != nil || status != 200 {
		t.Fatalf("after a garbled file: status %d, %v; want the old CA kept", status, err)
	}
	if err := os.WriteFile(f.caFile, next.CACert, 0o600); err != nil {
		t.Fatal(err)
	}
	f.client = next
	fresh := signedBy("kube-apiserver", false)(f)
	if status, _, err := f.post(f.httpClient(fresh, ""), "/", "", nil); err == nil {
		t.Fatalf("the new CA is accepted (status %d) before a reload round", status)
	}
	reloadRound(t, clk, reports, "client CA reloaded")
	if status, _, err := f.post(f.httpClient(fresh, ""), "/", "", nil); err != nil || status != 200 {
		t.Fatalf("after the reload: status %d, %v; want the new CA accepted", status, err)
	}
	if _, _, err := f.post(f.httpClient(old, ""), "/", "", nil); err == nil {
		t.Error("a certificate of the replaced CA is still accepted")
	}
}

// reloadRound steps clk by one reload interval once the reload loop waits
// on it, and waits for the round's report, which must contain want.
func reloadRound(t *testing.T, clk *clocktesting.FakeClock, reports <-chan string, want string) {
	t.Helper()
	waitFor(t, "the reload loop waits on the clock", clk.HasWaiters)
	clk.Step(10 * time.Second)
	select {
	case got := <-reports:
		if !strings.Contains(got, want) {
			t.Fatalf("reload round reported %s; want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no reload round reported %q", want)
	}
}
