package serving_test

import (
	"crypto/tls"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/serving"
)

// TestStartedCheckerTrustsAHandshakeOnlyForAWhile breaks the serving
// certificate after the checker's first handshake: the checker keeps
// answering healthy without dialling until the recheck interval passed,
// then fails, and dials at every check until a handshake succeeds again.
func TestStartedCheckerTrustsAHandshakeOnlyForAWhile(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	var broken atomic.Bool
	var handshakes atomic.Int64
	f := start(t, nil, func(o *serving.Options, f *fixture) {
		o.Clock = clk
		o.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			handshakes.Add(1)
			if broken.Load() {
				return nil, errors.New("no certificate")
			}
			return f.serving.Certificate(), nil
		}
	})
	check := f.srv.StartedChecker()
	broken.Store(true)
	for _, step := range []struct {
		advance time.Duration
		healthy bool
		dialled bool
	}{
		{advance: time.Second, healthy: true},     // trusted: no dial
		{advance: 8 * time.Second, healthy: true}, // 9 s after the handshake
		{advance: 2 * time.Second, healthy: false, dialled: true},
		{advance: 0, healthy: false, dialled: true}, // a failure is not trusted
	} {
		clk.SetTime(clk.Now().Add(step.advance))
		before := handshakes.Load()
		if err := check(nil); (err == nil) != step.healthy {
			t.Fatalf("%v on: err = %v, want healthy %v", step.advance, err, step.healthy)
		}
		if dialled := handshakes.Load() > before; dialled != step.dialled {
			t.Fatalf("%v on: dialled %v, want %v", step.advance, dialled, step.dialled)
		}
	}
	broken.Store(false)
	if err := check(nil); err != nil {
		t.Fatalf("the certificate is back: %v", err)
	}
}
