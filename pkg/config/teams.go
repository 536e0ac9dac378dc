package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
)

// DefaultLeaveGrace is teams.leaveGrace's default.
const DefaultLeaveGrace = 10 * time.Minute

// maxLeaveGrace bounds teams.leaveGrace: a namespace long gone from a team
// is not charged to it for more than a day.
const maxLeaveGrace = 24 * time.Hour

func setDefaultsTeams(c *Configuration) {
	c.Teams = orNew(c.Teams)
	setDefault(&c.Teams.LeaveGrace, metav1.Duration{Duration: DefaultLeaveGrace})
}

func validateTeams(t *configv1alpha1.Teams, p *field.Path) field.ErrorList {
	if t == nil || t.LeaveGrace == nil {
		return nil
	}
	if d := t.LeaveGrace.Duration; d < time.Second || d > maxLeaveGrace {
		return field.ErrorList{field.Invalid(p.Child("leaveGrace"), d.String(), "must be within 1s..24h")}
	}
	return nil
}
