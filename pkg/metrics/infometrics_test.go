package metrics

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuadmit/gpuadmit/pkg/certs"
)

// infoMetrics registers the build and certificate metrics of opts and
// serving on a fresh pedantic registry, as a collector for gathered.
type infoMetrics struct {
	opts    Info
	serving func() (*tls.Certificate, error)
}

// servingFunc serves the certificate a function returns.
type servingFunc func() (*tls.Certificate, error)

func (f servingFunc) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return f() }

func (m infoMetrics) registry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := RegisterInfo(reg, m.opts, servingFunc(m.serving)); err != nil {
		t.Fatal(err)
	}
	return reg
}

// samples gathers family name of reg, keyed by labels.
func samples(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for i, lp := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += lp.GetName() + "=" + lp.GetValue()
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// bundle is a self-signed CA and serving certificate valid for validity from now.
func bundle(t *testing.T, now time.Time, validity time.Duration) *certs.Bundle {
	t.Helper()
	b, err := certs.Generate([]string{"gpuadmit-webhook.gpuadmit-system.svc"}, nil, now, 5*365*24*time.Hour, validity)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func notAfter(t *testing.T, pemData []byte) time.Time {
	t.Helper()
	block, _ := pem.Decode(pemData)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.NotAfter
}

func TestCertificateExpiryMetric(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	soon, later := bundle(t, now, 3*24*time.Hour), bundle(t, now, 300*24*time.Hour)
	dir := t.TempDir()
	caFile := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	twoCAs := caFile("two.pem", append(append([]byte{}, later.CACert...), soon.ServerCert...))
	notPEM := caFile("bad.pem", []byte("not a certificate"))
	noLeaf, withLeaf := *soon.Certificate(), *later.Certificate()
	noLeaf.Leaf = nil
	withLeaf.Leaf = &x509.Certificate{NotAfter: now.Add(time.Hour)}
	serve := func(c *tls.Certificate) func() (*tls.Certificate, error) {
		return func() (*tls.Certificate, error) { return c, nil }
	}
	unix := func(at time.Time) float64 { return float64(at.Unix()) }
	for _, tt := range []struct {
		name     string
		serving  func() (*tls.Certificate, error)
		clientCA string
		want     map[string]float64
	}{
		{name: "the serving certificate's NotAfter", serving: serve(soon.Certificate()),
			want: map[string]float64{"certificate=serving": unix(notAfter(t, soon.ServerCert))}},
		{name: "parsed from its DER when it has no Leaf", serving: serve(&noLeaf),
			want: map[string]float64{"certificate=serving": unix(notAfter(t, soon.ServerCert))}},
		{name: "its Leaf when it has one", serving: serve(&withLeaf),
			want: map[string]float64{"certificate=serving": unix(now.Add(time.Hour))}},
		{name: "no certificate yet: no series",
			serving: func() (*tls.Certificate, error) { return nil, errors.New("gpuadmit: no serving certificate yet") }},
		{name: "an empty certificate: no series", serving: serve(&tls.Certificate{})},
		{name: "the client CA: the earliest of its certificates", serving: serve(later.Certificate()), clientCA: twoCAs,
			want: map[string]float64{"certificate=serving": unix(notAfter(t, later.ServerCert)),
				"certificate=client-ca": unix(notAfter(t, soon.ServerCert))}},
		{name: "an unreadable client CA: no series of its own", serving: serve(later.Certificate()), clientCA: filepath.Join(dir, "missing.pem"),
			want: map[string]float64{"certificate=serving": unix(notAfter(t, later.ServerCert))}},
		{name: "a client CA without a certificate: no series of its own", serving: serve(later.Certificate()), clientCA: notPEM,
			want: map[string]float64{"certificate=serving": unix(notAfter(t, later.ServerCert))}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := infoMetrics{opts: Info{ClientCAFile: tt.clientCA}, serving: tt.serving}.registry(t)
			compareSeries(t, samples(t, reg, "gpuadmit_certificate_expiry_timestamp_seconds"), orEmpty(tt.want))
		})
	}
}

func TestBuildInfoMetric(t *testing.T) {
	for _, tt := range []struct {
		name              string
		version, revision string
		want              string // "" : not the given values, but non-empty labels
	}{
		{name: "the values cmd/webhook is built with", version: "v0.4.0", revision: "2235514",
			want: fmt.Sprintf("goversion=%s,revision=2235514,version=v0.4.0", runtime.Version())},
		{name: "none given: the build's information, else unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := infoMetrics{opts: Info{Version: tt.version, Revision: tt.revision}, serving: func() (*tls.Certificate, error) {
				return nil, errors.New("none")
			}}.registry(t)
			got := samples(t, reg, "gpuadmit_build_info")
			if len(got) != 1 {
				t.Fatalf("gpuadmit_build_info: %v, want one series", got)
			}
			for labels, v := range got {
				if v != 1 || (tt.want != "" && labels != tt.want) {
					t.Errorf("gpuadmit_build_info{%s} = %v, want {%s} = 1", labels, v, tt.want)
				}
				version, revision := buildVersion("", "")
				if fallback := fmt.Sprintf("goversion=%s,revision=%s,version=%s", runtime.Version(), revision, version); tt.want == "" && labels != fallback {
					t.Errorf("gpuadmit_build_info{%s}, want {%s}", labels, fallback)
				}
			}
			problems, err := testutil.GatherAndLint(reg)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}

func TestVCSRevision(t *testing.T) {
	for _, tt := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{name: "no VCS stamp (-buildvcs=false)", want: ""},
		{name: "shortened as git does", settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "22355149f0c1d2e3"}}, want: "2235514"},
		{name: "modified", settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "22355149f0c1d2e3"}, {Key: "vcs.modified", Value: "true"}},
			want: "2235514-dirty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := vcsRevision(tt.settings); got != tt.want {
				t.Errorf("vcsRevision = %q, want %q", got, tt.want)
			}
		})
	}
}
