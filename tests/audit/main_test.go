// Package audit_test is the integration suite of namespaces over a limit
// lowered under their use, on a real kube-apiserver and etcd (envtest,
// through internal/cluster/local) with the webhook server wired as
// cmd/webhook wires it: the GPUUsage condition WithinLimits, the metric
// gpuadmit_namespace_over_limit and, with audit.openReports on, the
// OpenReports Report of the namespace (the CRD from the
// github.com/openreports/reports-api module, installed after gpuadmit
// started, as an operator may), following the quota down and up again.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package audit_test
