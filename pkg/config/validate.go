package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
)

// Validate checks every value of a defaulted configuration; each error
// names its key (admission.reservations.readsPerSecond).
func Validate(c *Configuration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateDevices(c)...)
	errs = append(errs, validateHAMiConfigMap(c.Devices)...)
	errs = append(errs, validateAdmission(c.Admission, field.NewPath("admission"))...)
	errs = append(errs, validateDRA(c)...)
	errs = append(errs, validateCapacity(c)...)
	errs = append(errs, validateWorkloads(c)...)
	errs = append(errs, validateTeams(c.Teams, field.NewPath("teams"))...)
	errs = append(errs, validateBudgets(c.Budgets, field.NewPath("budgets"))...)
	if _, err := labels.Parse(*c.Policy.ConfigMapSelector); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("policy", "configMapSelector"), *c.Policy.ConfigMapSelector, err.Error()))
	}
	if b := *c.Policy.MemoryBudgetMiB; b < 1 {
		errs = append(errs, field.Invalid(field.NewPath("policy", "memoryBudgetMiB"), b, "must be at least 1"))
	}
	cc, p := c.ClientConnection, field.NewPath("clientConnection")
	if *cc.QPS <= 0 {
		errs = append(errs, field.Invalid(p.Child("qps"), *cc.QPS, "must be positive"))
	}
	if *cc.Burst < 1 {
		errs = append(errs, field.Invalid(p.Child("burst"), *cc.Burst, "must be at least 1"))
	}
	return errs
}

func validateAdmission(a *configv1alpha1.Admission, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := *a.NearLimitPercent; n < 0 || n > 100 {
		errs = append(errs, field.Invalid(p.Child("nearLimitPercent"), n, "must be within 0..100 (0: never warn)"))
	}
	if u := *a.Unsatisfiable; u != configv1alpha1.UnsatisfiableDeny && u != configv1alpha1.UnsatisfiableWarn {
		errs = append(errs, field.NotSupported(p.Child("unsatisfiable"), u, []configv1alpha1.UnsatisfiablePolicy{configv1alpha1.UnsatisfiableDeny, configv1alpha1.UnsatisfiableWarn}))
	}
	if s := *a.StaleFeed; s != configv1alpha1.StaleFeedReservations && s != configv1alpha1.StaleFeedDeny {
		errs = append(errs, field.NotSupported(p.Child("staleFeed"), s, []configv1alpha1.StaleFeedPolicy{configv1alpha1.StaleFeedReservations, configv1alpha1.StaleFeedDeny}))
	}
	errs = append(errs, positive(p.Child("policyEvaluationTimeout"), a.PolicyEvaluationTimeout)...)
	errs = append(errs, positive(p.Child("reviewTimeout"), a.ReviewTimeout)...)
	errs = append(errs, validateReservations(a.Reservations, p.Child("reservations"))...)
	errs = append(errs, validateGangs(a.Gangs, p.Child("gangs"))...)
	w, wp := a.Watches, p.Child("watches")
	errs = append(errs, positive(wp.Child("probeEvery"), w.ProbeEvery)...)
	if w.StaleAfter.Duration <= w.ProbeEvery.Duration {
		errs = append(errs, field.Invalid(wp.Child("staleAfter"), w.StaleAfter.Duration.String(), "must be longer than probeEvery ("+w.ProbeEvery.Duration.String()+")"))
	}
	return errs
}

func validateReservations(r *configv1alpha1.Reservations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if *r.ReadsPerSecond < 1 {
		errs = append(errs, field.Invalid(p.Child("readsPerSecond"), *r.ReadsPerSecond, "must be at least 1"))
	}
	if n := *r.MaxPerNamespace; n < 1 || n > 5000 {
		errs = append(errs, field.Invalid(p.Child("maxPerNamespace"), n, "must be within 1..5000 (the object's size grows with it)"))
	}
	if r.ConfirmAfter.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("confirmAfter"), r.ConfirmAfter.Duration.String(), "must not be negative (0s derives it from the other webhooks)"))
	}
	if least := max(r.ConfirmAfter.Duration, time.Second); r.RecheckMax.Duration < least {
		errs = append(errs, field.Invalid(p.Child("recheckMax"), r.RecheckMax.Duration.String(), "must be at least confirmAfter ("+r.ConfirmAfter.Duration.String()+") and 1s"))
	}
	return errs
}

func positive(p *field.Path, d *metav1.Duration) field.ErrorList {
	if d.Duration <= 0 {
		return field.ErrorList{field.Invalid(p, d.Duration.String(), "must be positive")}
	}
	return nil
}

// validateNvidia checks HAMi's nvidia keys: names non-empty and distinct,
// defaults within HAMi's ranges.
func validateNvidia(n *configv1alpha1.NvidiaDevices, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]string{}
	for _, name := range []struct {
		key string
		val string
	}{
		{"resourceCountName", *n.ResourceCountName},
		{"resourceMemoryName", *n.ResourceMemoryName},
		{"resourceMemoryPercentageName", *n.ResourceMemoryPercentageName},
		{"resourceCoreName", *n.ResourceCoreName},
	} {
		switch other, dup := seen[name.val]; {
		case name.val == "":
			errs = append(errs, field.Required(p.Child(name.key), "a resource name"))
		case dup:
			errs = append(errs, field.Duplicate(p.Child(name.key), name.val+" (already "+p.Child(other).String()+")"))
		}
		seen[name.val] = name.key
	}
	for _, v := range []struct {
		key      string
		val, max int64
	}{
		{"defaultMemory", *n.DefaultMemory, -1},
		{"defaultCores", *n.DefaultCores, 100},
		{"defaultGPUNum", *n.DefaultGPUNum, -1},
		{"memoryFactor", *n.MemoryFactor, -1},
	} {
		switch {
		case v.val < 0:
			errs = append(errs, field.Invalid(p.Child(v.key), v.val, "must be >= 0"))
		case v.max >= 0 && v.val > v.max:
			errs = append(errs, field.Invalid(p.Child(v.key), v.val, "must be within 0..100"))
		}
	}
	return errs
}
