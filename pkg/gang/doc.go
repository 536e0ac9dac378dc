// Package gang says which gang a GPU pod belongs to, and reads the
// PodGroups that define gangs: a pod whose spec.schedulingGroup.podGroupName
// names a PodGroup (scheduling.k8s.io/v1beta1) with a gang policy, or,
// opt-in, a pod with the annotations gpuadmit.io/gang and
// gpuadmit.io/gang-min-count. pkg/admitqueue admits a gang whole or not
// at all (its holds, in the namespace's GPUReservationSet).
//
// What it reads is written by the namespace's users: a gang's minCount is
// trusted only for how much room to hold (bounded by MaxMinCount; a hold
// larger than the namespace's limit is simply denied), never for a lower
// charge. A pod naming a PodGroup that does not exist (yet) is denied with
// a message to retry once it exists; one whose PodGroup has the Basic
// policy, or a gang of one, is an ordinary pod; bad annotation values are
// denied, naming the value.
//
// Groups is the PodGroup informer (cluster-wide, trimmed to what is read),
// started only when the API server serves the PodGroup API (Served).
package gang
