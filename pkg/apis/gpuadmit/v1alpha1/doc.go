// Package v1alpha1 is gpuadmit's API group gpuadmit.io, version v1alpha1,
// two namespaced kinds, one object of each per namespace:
//
//   - GPUReservationSet holds the namespace's open reservations (pods
//     admitted that the watches have not recorded in every replica yet).
//     Every webhook replica reads it before deciding and writes it, with the
//     object's resourceVersion, before it answers "allowed", so replicas
//     never admit the same free MiB twice.
//   - GPUUsage is what users read (kubectl get gpuusage): usage, limits and
//     conditions, written by the elected replica only. It is a separate
//     object so that its writes never make a reservation write conflict.
//
// +kubebuilder:object:generate=true
// +groupName=gpuadmit.io
package v1alpha1
