package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
)

// DefaultGangHoldTimeout is admission.gangs.holdTimeout's default.
const DefaultGangHoldTimeout = 5 * time.Minute

// maxGangHoldTimeout bounds admission.gangs.holdTimeout: a hold longer
// than a day keeps a namespace's room from pods that will not come.
const maxGangHoldTimeout = 24 * time.Hour

func setDefaultsGangs(a *configv1alpha1.Admission) {
	a.Gangs = orNew(a.Gangs)
	setDefault(&a.Gangs.HoldTimeout, metav1.Duration{Duration: DefaultGangHoldTimeout})
}

func validateGangs(g *configv1alpha1.Gangs, p *field.Path) field.ErrorList {
	if d := g.HoldTimeout.Duration; d < time.Second || d > maxGangHoldTimeout {
		return field.ErrorList{field.Invalid(p.Child("holdTimeout"), d.String(), "must be within 1s..24h")}
	}
	return nil
}
