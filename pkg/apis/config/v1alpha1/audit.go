package v1alpha1

import "k8s.io/utils/ptr"

// Audit says how gpuadmit reports namespaces whose usage passes a limit
// lowered under it (admission never passes a limit; nothing evicts what a
// lowered limit no longer covers). The GPUUsage condition WithinLimits and
// the metric gpuadmit_namespace_over_limit are always kept.
type Audit struct {
	// OpenReports: the elected replica also writes one OpenReports Report
	// (openreports.io/v1alpha1, the format Kyverno writes) per namespace
	// with a GPU limit, one result per limited resource (default false:
	// the CRD must be installed).
	OpenReports *bool `json:"openReports,omitempty"`
}

// OpenReportsEnabled reports whether the OpenReports writer runs (a
// defaulted configuration).
func (c *Configuration) OpenReportsEnabled() bool {
	return c.Audit != nil && ptr.Deref(c.Audit.OpenReports, false)
}
