// Package why is `gpuadmit why KIND/NAME`: why a workload of the live
// cluster is short of pods. It reads the workload (a Deployment,
// ReplicaSet, StatefulSet, Job or CronJob), the pods its controllers own,
// the denials' Events gpuadmit recorded on it, the namespace's usage
// against its limits (the CLI's live ledger, reservations counted) and the
// namespace's GPUReservationSet for a gang the workload's pods wait in,
// and prints desired, existing and running pods, the last denial and what
// would have to be freed or raised for the missing pods to fit. The Events
// are informational: anyone allowed to create Events in the namespace can
// write one.
package why
