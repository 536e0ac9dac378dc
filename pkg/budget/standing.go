package budget

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// Kinds of budget.
const (
	KindBudget        = "GPUBudget"
	KindClusterBudget = "GPUClusterBudget"
)

// Standing is one budget's position at a moment: what admission decides
// against and what the views show.
type Standing struct {
	Kind string
	// Namespace is a GPUBudget's namespace ("" for a GPUClusterBudget).
	Namespace, Name string
	// Window is the window's description ("Monthly Europe/Berlin",
	// "rolling 720h0m0s").
	Window                 string
	WindowStart, WindowEnd time.Time
	// Resources are the enforced keys of spec.hard, in name order.
	Resources []ResourceStanding
	// Problems name the keys of spec.hard (or the window) that cannot be
	// enforced (the Valid condition's message); the other keys are.
	Problems []string
}

// ResourceStanding is one limited resource of a budget.
type ResourceStanding struct {
	Resource corev1.ResourceName
	// Family and Dimension ("gpu", "gpumem", "gpucores") say which part of
	// a charge burns it.
	Family, Dimension string
	Hard, Used        burn.Amount
	// RatePerHour is the burn of the last hour (an Amount per hour).
	RatePerHour burn.Amount
}
