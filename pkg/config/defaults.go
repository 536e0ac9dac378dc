package config

import (
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Defaults of the configuration (SetDefaults).
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

// SetDefaults sets every unset field of c to its default: the one place
// defaults live (the API types of pkg/apis/config/v1alpha1 import nothing of
// the project, so the defaults read off the device families are set here).
// An explicit value, zero included, stays. Decoding through codecs sets them
// too (the scheme's defaulting function is SetDefaults).
func SetDefaults(c *Configuration) {
	if c.APIVersion == "" && c.Kind == "" {
		c.APIVersion, c.Kind = configv1alpha1.SchemeGroupVersion.String(), configv1alpha1.Kind
	}
	c.Devices = orNew(c.Devices)
	c.Devices.Nvidia = orNew(c.Devices.Nvidia)
	setDefaultsNvidia(c.Devices.Nvidia)
	setDefaultsSections(c.Devices)
	a := orNew(c.Admission)
	c.Admission = a
	setDefault(&a.NearLimitPercent, DefaultNearLimitPercent)
	setDefault(&a.Unsatisfiable, configv1alpha1.UnsatisfiableDeny)
	setDefault(&a.PolicyEvaluationTimeout, metav1.Duration{Duration: DefaultPolicyEvaluationTimeout})
	setDefault(&a.ReviewTimeout, metav1.Duration{Duration: DefaultReviewTimeout})
	setDefault(&a.StaleFeed, configv1alpha1.StaleFeedReservations)
	a.Reservations = orNew(a.Reservations)
	setDefault(&a.Reservations.ConfirmAfter, metav1.Duration{})
	setDefault(&a.Reservations.RecheckMax, metav1.Duration{Duration: DefaultRecheckMax})
	setDefault(&a.Reservations.ReadsPerSecond, DefaultReadsPerSecond)
	setDefault(&a.Reservations.MaxPerNamespace, DefaultMaxPerNamespace)
	a.Watches = orNew(a.Watches)
	setDefault(&a.Watches.ProbeEvery, metav1.Duration{Duration: DefaultProbeEvery})
	setDefault(&a.Watches.StaleAfter, metav1.Duration{Duration: DefaultStaleAfter})
	setDefaultsGangs(a)
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
	setDefaultsWorkloads(c)
	setDefaultsTeams(c)
	setDefaultsBudgets(c)
}

// setDefaultsNvidia sets HAMi's own defaults (effective.DefaultSettings:
// its chart's device-config.yaml).
func setDefaultsNvidia(n *configv1alpha1.NvidiaDevices) {
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

func setDefaultsAudit(c *Configuration) {
	c.Audit = orNew(c.Audit)
	setDefault(&c.Audit.OpenReports, false)
}

// DefaultMaxDeviceMemoryMiB is the default bound of every family: 1 TiB
// (devices.DefaultMaxDeviceMemoryMiB).
const DefaultMaxDeviceMemoryMiB = devices.DefaultMaxDeviceMemoryMiB

func setDefaultsCapacity(c *Configuration) {
	c.Capacity = orNew(c.Capacity)
	if _, ok := c.Capacity.MaxDeviceMemoryMiB[configv1alpha1.DefaultFamilyBound]; !ok {
		m := maps.Clone(c.Capacity.MaxDeviceMemoryMiB)
		if m == nil {
			m = map[string]int64{}
		}
		m[configv1alpha1.DefaultFamilyBound] = DefaultMaxDeviceMemoryMiB
		c.Capacity.MaxDeviceMemoryMiB = m
	}
}

// DefaultDeviceClasses are the classes governed when the configuration has
// no dra section: HAMi-DRA's and NVIDIA's, charged to the nvidia family.
func DefaultDeviceClasses() []configv1alpha1.DeviceClass {
	hundred := int64(100)
	nvidiaType := func(t string) []string {
		return []string{"device.driver == '" + configv1alpha1.NvidiaGPUClass + "' && device.attributes['" + configv1alpha1.NvidiaGPUClass + "'].type == '" + t + "'"}
	}
	return []configv1alpha1.DeviceClass{
		{Name: configv1alpha1.HAMiDRAClass, Mode: configv1alpha1.DeviceClassCapacity, Driver: configv1alpha1.HAMiDRAClass,
			Selectors: []string{`device.driver == "` + configv1alpha1.HAMiDRAClass + `" && device.attributes["` + configv1alpha1.HAMiDRAClass + `"].type == "hami-gpu"`}},
		{Name: configv1alpha1.NvidiaGPUClass, Mode: configv1alpha1.DeviceClassDevice, Driver: configv1alpha1.NvidiaGPUClass, CoresPerDevice: &hundred, Selectors: nvidiaType("gpu")},
		{Name: configv1alpha1.NvidiaMIGClass, Mode: configv1alpha1.DeviceClassDevice, Driver: configv1alpha1.NvidiaGPUClass, Selectors: nvidiaType("mig")},
	}
}

func setDefaultsDRA(c *Configuration) {
	if c.DRA == nil {
		c.DRA = &configv1alpha1.DRA{DeviceClasses: DefaultDeviceClasses()}
	}
	if c.DRA.NetworkPoolDrivers == nil {
		c.DRA.NetworkPoolDrivers = []string{configv1alpha1.AnyDriver}
	}
	for i := range c.DRA.DeviceClasses {
		dc := &c.DRA.DeviceClasses[i]
		if dc.Family == "" {
			dc.Family = effective.NvidiaName
		}
		setDefault(&dc.MemoryCapacity, "memory")
		setDefault(&dc.CoresCapacity, "cores")
		setDefault(&dc.CoresPerDevice, 0)
	}
}
