package absence

import (
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// newConfirmer returns a Confirmer configured as the admission queues'
// tests configure theirs (confirmAfter 1 s, rechecks up to 4 s), on a fake
// clock; it reads nothing.
func newConfirmer() (*Confirmer, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	return New(nil, nil, nil, Options{ConfirmAfter: time.Second, RecheckMax: 4 * time.Second, Clock: clk}), clk
}

// TestWindowFollowsObservedLatency: a reservation whose pod took 3 s to be
// recorded (a loaded API server storing creates slowly) makes the next
// reservations' pods be read 6 s after they were first seen, not after the
// configured 1 s: a read then would find a pod about to be stored absent
// and end its reservation (over-admission). Faster recordings bring the
// window back down, never below the configured one.
func TestWindowFollowsObservedLatency(t *testing.T) {
	a, clk := newConfirmer()
	t0 := clk.Now()
	if got := a.DueAt("slow").Sub(t0); got != time.Second {
		t.Fatalf("first reservation due after %s, want the configured 1s", got)
	}
	clk.SetTime(t0.Add(3 * time.Second))
	a.Recorded("slow", clk.Now(), time.Time{})
	t1 := clk.Now()
	if got := a.DueAt("next").Sub(t1); got != 6*time.Second {
		t.Errorf("after a 3s recording, a new reservation is due after %s, want 6s", got)
	}
	if got := a.DueAt("slow").Sub(t0); got != 6*time.Second {
		t.Errorf("an earlier reservation not read yet is due %s after it was seen, want 6s (the window applies when it is read)", got)
	}
	for i := range 40 {
		uid := "fast-" + string(rune('a'+i))
		a.DueAt(types.UID(uid))
		clk.SetTime(clk.Now().Add(10 * time.Millisecond))
		a.Recorded(types.UID(uid), clk.Now(), time.Time{})
	}
	if got := a.DueAt("later").Sub(clk.Now()); got != time.Second {
		t.Errorf("after 40 fast recordings a new reservation is due after %s, want the configured 1s again", got)
	}
}

// TestWindowIgnoresOutages: a reservation that took 16 s to be recorded
// because this replica was cut off from the API server meanwhile (its
// liveness made it suspect after the reservation was seen) leaves the
// window as configured: after an outage, ghost reservations end as fast as
// before it.
func TestWindowIgnoresOutages(t *testing.T) {
	a, clk := newConfirmer()
	t0 := clk.Now()
	a.DueAt("during-outage")
	clk.SetTime(t0.Add(16 * time.Second))
	a.Recorded("during-outage", clk.Now(), t0.Add(5*time.Second))
	if got := a.DueAt("next").Sub(clk.Now()); got != time.Second {
		t.Errorf("after a recording slowed by an outage, a new reservation is due after %s, want the configured 1s", got)
	}
	// One seen after the outage still teaches.
	a.DueAt("after")
	clk.SetTime(clk.Now().Add(3 * time.Second))
	a.Recorded("after", clk.Now(), t0.Add(5*time.Second))
	if got := a.DueAt("next-2").Sub(clk.Now()); got != 6*time.Second {
		t.Errorf("after a 3s recording past the outage, a new reservation is due after %s, want 6s", got)
	}
}

// TestConfirmWindow: the window is the longest timeout of the other
// validating webhooks that may intercept pod creates, plus the margin.
func TestConfirmWindow(t *testing.T) {
	hook := func(timeout *int32, groups, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{TimeoutSeconds: timeout, Rules: []admissionregistrationv1.RuleWithOperations{
			{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, Resources: resources}}}}
	}
	config := func(name string, hooks ...admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.ValidatingWebhookConfiguration {
		return admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
	}
	core, pods := []string{""}, []string{"pods"}
	create := admissionregistrationv1.Create
	for _, tt := range []struct {
		name    string
		configs []admissionregistrationv1.ValidatingWebhookConfiguration
		want    time.Duration
	}{
		{"none", nil, ConfirmMargin},
		{"gpuadmit's own is left out", []admissionregistrationv1.ValidatingWebhookConfiguration{config("gpuadmit", hook(ptr.To[int32](30), core, pods, create))}, ConfirmMargin},
		{"Kyverno-like, default timeout", []admissionregistrationv1.ValidatingWebhookConfiguration{
			config("kyverno", hook(nil, []string{"*"}, []string{"*"}, admissionregistrationv1.OperationAll))}, 10*time.Second + ConfirmMargin},
		{"the longest of several", []admissionregistrationv1.ValidatingWebhookConfiguration{
			config("gatekeeper", hook(ptr.To[int32](3), []string{"*"}, []string{"*/*"}, create)),
			config("slow", hook(ptr.To[int32](25), core, pods, create))}, 25*time.Second + ConfirmMargin},
		{"updates, other resources, other groups do not count", []admissionregistrationv1.ValidatingWebhookConfiguration{
			config("a", hook(ptr.To[int32](20), core, pods, admissionregistrationv1.Update)),
			config("b", hook(ptr.To[int32](20), core, []string{"pods/status", "configmaps"}, create)),
			config("c", hook(ptr.To[int32](20), []string{"apps"}, []string{"*"}, create))}, ConfirmMargin},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := confirmWindow(tt.configs, "gpuadmit"); got != tt.want {
				t.Fatalf("window %s, want %s", got, tt.want)
			}
		})
	}
}
