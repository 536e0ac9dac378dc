package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
)

// The defaults of the budgets section.
const (
	DefaultBudgetCheckpointInterval = time.Minute
	DefaultBudgetClockTolerance     = time.Minute
	DefaultBudgetRollingBuckets     = 48
)

// DefaultBudgetWarnPercents is budgets.warnPercents' default (a function:
// no mutable globals).
func DefaultBudgetWarnPercents() []int64 { return []int64{80, 95} }

// The bounds of the budgets section: a checkpoint at most every second
// and at least every hour (what a change of leader may lose); a tolerance
// of at most an hour (what a node may take off a run); 4..500 slices of a
// rolling window (its folded burn over-counts by at most one slice; the
// status holds one amount list per slice).
const (
	minCheckpointInterval = time.Second
	maxCheckpointInterval = time.Hour
	maxClockTolerance     = time.Hour
	minRollingBuckets     = 4
	maxRollingBuckets     = 500
)

func setDefaultsBudgets(c *Configuration) {
	c.Budgets = orNew(c.Budgets)
	b := c.Budgets
	setDefault(&b.CheckpointInterval, metav1.Duration{Duration: DefaultBudgetCheckpointInterval})
	setDefault(&b.ClockTolerance, metav1.Duration{Duration: DefaultBudgetClockTolerance})
	setDefault(&b.RollingBuckets, int32(DefaultBudgetRollingBuckets))
	if b.WarnPercents == nil {
		b.WarnPercents = DefaultBudgetWarnPercents()
	}
}

func validateBudgets(b *configv1alpha1.Budgets, p *field.Path) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	if b.CheckpointInterval != nil {
		if d := b.CheckpointInterval.Duration; d < minCheckpointInterval || d > maxCheckpointInterval {
			errs = append(errs, field.Invalid(p.Child("checkpointInterval"), d.String(), "must be within 1s..1h"))
		}
	}
	if b.ClockTolerance != nil {
		if d := b.ClockTolerance.Duration; d < 0 || d > maxClockTolerance {
			errs = append(errs, field.Invalid(p.Child("clockTolerance"), d.String(), "must be within 0s..1h"))
		}
	}
	if b.RollingBuckets != nil {
		if n := *b.RollingBuckets; n < minRollingBuckets || n > maxRollingBuckets {
			errs = append(errs, field.Invalid(p.Child("rollingBuckets"), n, "must be within 4..500"))
		}
	}
	return append(errs, validateWarnPercents(b.WarnPercents, p.Child("warnPercents"))...)
}

// validateWarnPercents: each 1..100, strictly ascending.
func validateWarnPercents(ps []int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range ps {
		switch {
		case v < 1 || v > 100:
			errs = append(errs, field.Invalid(p.Index(i), v, "must be within 1..100"))
		case i > 0 && v <= ps[i-1]:
			errs = append(errs, field.Invalid(p.Index(i), v, "must be above the one before (ascending, no repeats)"))
		}
	}
	return errs
}
