package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Defaults of the configuration (SetDefaults_Configuration).
const (
	DefaultNearLimitPercent        = 90
	DefaultPolicyEvaluationTimeout = time.Second
	DefaultReviewTimeout           = 8 * time.Second
	DefaultRecheckMax              = 30 * time.Second
	DefaultReadsPerSecond          = 20
	DefaultMaxPerNamespace         = 500
	DefaultProbeEvery              = 15 * time.Second
	DefaultStaleAfter              = 3 * time.Minute
	DefaultConfigMapSelector       = "gpuadmit.io/policy=true"
	DefaultPolicyMemoryBudgetMiB   = 64
	DefaultQPS                     = 500
	DefaultBurst                   = 1000
)

// SetDefaults_Configuration sets every unset field of c to its default:
// the one place defaults live. An explicit value, zero included, stays.
//
//nolint:revive // the name is the Kubernetes convention for defaulting functions
func SetDefaults_Configuration(c *Configuration) {
	if c.APIVersion == "" && c.Kind == "" {
		c.APIVersion, c.Kind = SchemeGroupVersion.String(), Kind
	}
	c.Devices = orNew(c.Devices)
	c.Devices.Nvidia = orNew(c.Devices.Nvidia)
	setDefaultsNvidia(c.Devices.Nvidia)
	setDefaultsSections(c.Devices)
	a := orNew(c.Admission)
	c.Admission = a
	setDefault(&a.NearLimitPercent, DefaultNearLimitPercent)
	setDefault(&a.Unsatisfiable, UnsatisfiableDeny)
	setDefault(&a.PolicyEvaluationTimeout, metav1.Duration{Duration: DefaultPolicyEvaluationTimeout})
	setDefault(&a.ReviewTimeout, metav1.Duration{Duration: DefaultReviewTimeout})
	setDefault(&a.StaleFeed, StaleFeedReservations)
	a.Reservations = orNew(a.Reservations)
	setDefault(&a.Reservations.ConfirmAfter, metav1.Duration{})
	setDefault(&a.Reservations.RecheckMax, metav1.Duration{Duration: DefaultRecheckMax})
	setDefault(&a.Reservations.ReadsPerSecond, DefaultReadsPerSecond)
	setDefault(&a.Reservations.MaxPerNamespace, DefaultMaxPerNamespace)
	a.Watches = orNew(a.Watches)
	setDefault(&a.Watches.ProbeEvery, metav1.Duration{Duration: DefaultProbeEvery})
	setDefault(&a.Watches.StaleAfter, metav1.Duration{Duration: DefaultStaleAfter})
	c.Policy = orNew(c.Policy)
	setDefault(&c.Policy.ConfigMapSelector, DefaultConfigMapSelector)
	setDefault(&c.Policy.Directory, "")
	setDefault(&c.Policy.MemoryBudgetMiB, DefaultPolicyMemoryBudgetMiB)
	c.ClientConnection = orNew(c.ClientConnection)
	setDefault(&c.ClientConnection.QPS, DefaultQPS)
	setDefault(&c.ClientConnection.Burst, DefaultBurst)
	setDefaultsDRA(c)
	setDefaultsAudit(c)
	setDefaultsCapacity(c)
}

// setDefaultsNvidia sets HAMi's own defaults (effective.DefaultSettings:
// its chart's device-config.yaml).
func setDefaultsNvidia(n *NvidiaDevices) {
	d := effective.Nvidia()
	setDefault(&n.ResourceCountName, string(d.Names.Count))
	setDefault(&n.ResourceMemoryName, string(d.Names.Memory))
	setDefault(&n.ResourceMemoryPercentageName, string(d.Names.MemoryPercentage))
	setDefault(&n.ResourceCoreName, string(d.Names.Cores))
	setDefault(&n.DefaultMemory, d.DefaultMemory)
	setDefault(&n.DefaultCores, d.DefaultCores)
	setDefault(&n.DefaultGPUNum, d.DefaultGPUNum)
	setDefault(&n.MemoryFactor, d.MemoryFactor)
	setDefault(&n.ExclusiveCores, d.ExclusiveCores)
}

func orNew[T any](v *T) *T {
	if v == nil {
		return new(T)
	}
	return v
}

func setDefault[T any](field **T, def T) {
	if *field == nil {
		*field = ptr.To(def)
	}
}
