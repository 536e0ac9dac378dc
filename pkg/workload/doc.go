// Package workload reads the pod sets of a workload object: for each pod
// template of a Deployment, ReplicaSet, StatefulSet, Job, CronJob, or a
// configured custom kind (JobSet, LeaderWorkerSet, RayCluster, Kubeflow's
// jobs...), the template as a Pod and the number of pods the workload makes
// of it. A kind says where its templates are and which counts multiply
// into their pod counts, in a small path syntax parsed once: dotted field
// names, and [*] over a list's items or a map's values. It is pure: no
// client, no ledger; the webhook and the command line read workloads
// through it alike.
package workload
