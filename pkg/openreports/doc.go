// Package openreports writes gpuadmit's audit as OpenReports Reports
// (openreports.io/v1alpha1, the format Kyverno and other policy engines
// write, read by Policy Reporter and similar tools): one Report named
// gpuadmit-quota per namespace with a GPU limit, one result per limited
// resource — pass within the limit, fail when usage passes a limit lowered
// under it, error for an unusable quota value — and one result per limit
// of each team quota (GPUClusterQuota) that counts the namespace, charged
// with the team's usage over its namespaces together. It runs on the elected
// replica only; the Reports are an output, never read back for a decision.
package openreports
