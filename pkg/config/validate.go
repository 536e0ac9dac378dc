package config

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// apply sets the values the file gives (durations parsed, keys named in
// errors).
func (f *file) apply(c *Configuration) error {
	if a := f.Admission; a != nil {
		set(&c.Admission.NearLimitPercent, a.NearLimitPercent)
		set(&c.Admission.Unsatisfiable, a.Unsatisfiable)
		set(&c.Admission.StaleFeed, a.StaleFeed)
		if err := duration("admission.policyEvaluationTimeout", a.PolicyEvaluationTimeout, &c.Admission.PolicyEvaluationTimeout); err != nil {
			return err
		}
		if err := duration("admission.reviewTimeout", a.ReviewTimeout, &c.Admission.ReviewTimeout); err != nil {
			return err
		}
		if r := a.Reservations; r != nil {
			set(&c.Admission.Reservations.ReadsPerSecond, r.ReadsPerSecond)
			set(&c.Admission.Reservations.MaxPerNamespace, r.MaxPerNamespace)
			if err := duration("admission.reservations.confirmAfter", r.ConfirmAfter, &c.Admission.Reservations.ConfirmAfter); err != nil {
				return err
			}
			if err := duration("admission.reservations.recheckMax", r.RecheckMax, &c.Admission.Reservations.RecheckMax); err != nil {
				return err
			}
		}
		if w := a.Watches; w != nil {
			if err := duration("admission.watches.probeEvery", w.ProbeEvery, &c.Admission.Watches.ProbeEvery); err != nil {
				return err
			}
			if err := duration("admission.watches.staleAfter", w.StaleAfter, &c.Admission.Watches.StaleAfter); err != nil {
				return err
			}
		}
	}
	if p := f.Policy; p != nil {
		set(&c.Policy.ConfigMapSelector, p.ConfigMapSelector)
		set(&c.Policy.Directory, p.Directory)
	}
	return nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func duration(key string, v *string, dst *time.Duration) error {
	if v == nil {
		return nil
	}
	d, err := time.ParseDuration(*v)
	if err != nil {
		return fmt.Errorf("%s: want a duration such as 5s or 1m30s, got %q", key, *v)
	}
	*dst = d
	return nil
}

// Validate checks every value; errors name the key.
func (c *Configuration) Validate() error {
	a := c.Admission
	positive := func(key string, d time.Duration) error {
		if d <= 0 {
			return fmt.Errorf("%s: must be positive, got %s", key, d)
		}
		return nil
	}
	switch {
	case a.NearLimitPercent < 1 || a.NearLimitPercent > 100:
		return fmt.Errorf("admission.nearLimitPercent: must be within 1..100, got %d", a.NearLimitPercent)
	case a.Unsatisfiable != UnsatisfiableDeny && a.Unsatisfiable != UnsatisfiableWarn:
		return fmt.Errorf("admission.unsatisfiable: want %s or %s, got %q", UnsatisfiableDeny, UnsatisfiableWarn, a.Unsatisfiable)
	case a.StaleFeed != StaleFeedReservations && a.StaleFeed != StaleFeedDeny:
		return fmt.Errorf("admission.staleFeed: want %s or %s, got %q", StaleFeedReservations, StaleFeedDeny, a.StaleFeed)
	case a.Reservations.ReadsPerSecond < 1:
		return fmt.Errorf("admission.reservations.readsPerSecond: must be at least 1, got %d", a.Reservations.ReadsPerSecond)
	case a.Reservations.MaxPerNamespace < 1 || a.Reservations.MaxPerNamespace > 5000:
		return fmt.Errorf("admission.reservations.maxPerNamespace: must be within 1..5000 (the object's size grows with it), got %d", a.Reservations.MaxPerNamespace)
	case a.Reservations.ConfirmAfter < 0:
		return fmt.Errorf("admission.reservations.confirmAfter: must not be negative (0s derives it from the other webhooks), got %s", a.Reservations.ConfirmAfter)
	case a.Reservations.RecheckMax < max(a.Reservations.ConfirmAfter, time.Second):
		return fmt.Errorf("admission.reservations.recheckMax: must be at least confirmAfter (%s) and 1s, got %s", a.Reservations.ConfirmAfter, a.Reservations.RecheckMax)
	case a.Watches.StaleAfter <= a.Watches.ProbeEvery:
		return fmt.Errorf("admission.watches.staleAfter: must be longer than probeEvery (%s), got %s", a.Watches.ProbeEvery, a.Watches.StaleAfter)
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{
		{"admission.policyEvaluationTimeout", a.PolicyEvaluationTimeout},
		{"admission.reviewTimeout", a.ReviewTimeout},
		{"admission.watches.probeEvery", a.Watches.ProbeEvery},
	} {
		if err := positive(d.key, d.d); err != nil {
			return err
		}
	}
	if _, err := labels.Parse(c.Policy.ConfigMapSelector); err != nil {
		return fmt.Errorf("policy.configMapSelector: %w", err)
	}
	return c.Devices.Validate()
}
