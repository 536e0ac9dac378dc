// Package v1alpha1 is gpuadmit's API group gpuadmit.io, version v1alpha1:
// GPUUsage, one object per namespace, whose status holds the namespace's
// open reservations (pods admitted that the watches have not recorded in
// every replica yet). Every webhook replica reads it before deciding and
// writes it, with the object's resourceVersion, before it answers
// "allowed", so replicas never admit the same free MiB twice.
//
// +kubebuilder:object:generate=true
// +groupName=gpuadmit.io
package v1alpha1
