// Package manifest reads Kubernetes manifests the way kubectl prints them:
// YAML or JSON, a single object, a List, or a multi-document stream. It keeps
// the Pods, Nodes, ResourceQuotas and Namespaces, the pod templates of
// workload controllers, and the resource.k8s.io/v1 ResourceClaims,
// ResourceClaimTemplates, ResourceSlices and DeviceClasses, and explains
// precisely what is wrong with input it cannot read (document number,
// object, container or request, field, value).
// ReadFiles reads what repeated -f flags name, directories included, as
// kubectl reads them.
package manifest
