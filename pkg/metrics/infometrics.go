package metrics

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the certificate label of gpuadmit_certificate_expiry_timestamp_seconds.
const (
	certServing  = "serving"
	certClientCA = "client-ca"
)

// unknownBuild is a version or revision nothing recorded.
const unknownBuild = "unknown"

// Certificates serve this replica's certificate (*certs.Rotator, or
// controller-runtime's *certwatcher.CertWatcher).
type Certificates interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Info names this build and the client CA for RegisterInfo.
type Info struct {
	// Version and Revision name this build (empty: the binary's module
	// version and VCS stamp, else "unknown").
	Version, Revision string
	// ClientCAFile is the client CA's PEM file ("": client authentication
	// is off).
	ClientCAFile string
}

// RegisterInfo registers gpuadmit_build_info and the certificate expiry
// gauge: what this binary is, and when what it serves expires.
func RegisterInfo(reg prometheus.Registerer, opts Info, serving Certificates) error {
	version, revision := buildVersion(opts.Version, opts.Revision)
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuadmit_build_info",
		Help:        "1, labelled with the version and VCS revision of this webhook binary and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()}})
	info.Set(1)
	certs := &certificateCollector{serving: serving, clientCA: opts.ClientCAFile,
		desc: prometheus.NewDesc("gpuadmit_certificate_expiry_timestamp_seconds",
			"When a certificate expires (its NotAfter, in seconds since the epoch), read at scrape time: serving (the certificate this replica serves now), client-ca (the earliest of --client-ca-file's certificates, when set). No series while there is none or it cannot be read.",
			[]string{"certificate"}, nil)}
	for _, c := range []prometheus.Collector{info, certs} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering build and certificate metrics: %w", err)
		}
	}
	return nil
}

// buildVersion is the version and revision of this binary: those given
// (cmd/webhook's -ldflags), else the module's version and the VCS revision
// Go stamped (shortened as git does, "-dirty" when modified), else
// "unknown".
func buildVersion(version, revision string) (string, string) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; version == "" && v != "" && v != "(devel)" {
			version = v
		}
		if revision == "" {
			revision = vcsRevision(bi.Settings)
		}
	}
	return cmp.Or(version, unknownBuild), cmp.Or(revision, unknownBuild)
}

func vcsRevision(settings []debug.BuildSetting) string {
	vcs := map[string]string{}
	for _, s := range settings {
		vcs[s.Key] = s.Value
	}
	rev := vcs["vcs.revision"]
	if rev == "" {
		return ""
	}
	rev = rev[:min(len(rev), 7)]
	if vcs["vcs.modified"] == "true" {
		rev += "-dirty"
	}
	return rev
}

// certificateCollector reports the expiry of the serving certificate and
// of the client CA at scrape time.
type certificateCollector struct {
	serving  Certificates
	clientCA string // a PEM file; "" when client authentication is off
	desc     *prometheus.Desc
}

func (c *certificateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *certificateCollector) Collect(ch chan<- prometheus.Metric) {
	if at, err := servingExpiry(c.serving); err == nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(at.Unix()), certServing)
	}
	if c.clientCA == "" {
		return
	}
	if at, err := fileExpiry(c.clientCA); err == nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(at.Unix()), certClientCA)
	}
}

// servingExpiry is the NotAfter of the leaf certificate serving returns.
func servingExpiry(serving Certificates) (time.Time, error) {
	c, err := serving.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		return time.Time{}, err
	}
	if c == nil || len(c.Certificate) == 0 {
		return time.Time{}, errors.New("no serving certificate yet")
	}
	leaf := c.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return time.Time{}, fmt.Errorf("parsing the serving certificate: %w", err)
		}
	}
	return leaf.NotAfter, nil
}

// fileExpiry is the earliest NotAfter of the PEM certificates in file.
func fileExpiry(file string) (time.Time, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the client CA: %w", err)
	}
	var earliest time.Time
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("parsing the client CA %s: %w", file, err)
		}
		if earliest.IsZero() || cert.NotAfter.Before(earliest) {
			earliest = cert.NotAfter
		}
	}
	if earliest.IsZero() {
		return time.Time{}, fmt.Errorf("client CA %s: no PEM certificate in it", file)
	}
	return earliest, nil
}
