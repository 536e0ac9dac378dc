// Package ledger is gpuadmit's in-process usage ledger: what every namespace
// and every GPU device is using right now, the ResourceQuota limits that
// apply, the device capacity of every node, and the labels of every
// namespace. It holds only what the watches delivered.
//
// The ledger is fed by informers on Pods, Nodes, ResourceQuotas and
// Namespaces (Feed; pods through an ordered queue that reports how far it
// got, podfeed.go) or, offline, by the objects of a manifest (the `gpuadmit
// usage` command). It is modelled on Kueue's cache: for every GPU pod it stores the usage it charged
// (the namespace vector and the per-device vectors); every event re-derives
// the pod's target from the Pod object alone (pkg/effective: Compute,
// StageOf, TargetOf) and replaces the stored value with it (subtract stored,
// add target); a deletion subtracts exactly what is stored. Because the target
// is a pure function of the object, duplicate events, resyncs and relists are
// harmless and a rebuilt ledger lands every pod straight in the state its
// status shows. Sums never go negative.
//
// Reservations of pods admitted but not yet recorded are not the ledger's:
// they live in the namespaces' GPUUsage objects (pkg/gpuusage), and whoever
// asks about a namespace hands in the ones it would count; the snapshot
// counts those the watch has not recorded, under the same lock as the usage
// (reservation.go, with its diagram). The Feed also reports watches that
// fell behind the API server (freshness.go).
//
// Reads are snapshots taken under a read lock: Namespace (used, reserved,
// limits with the quota that set them, problems), Capacity (per node: labels
// and device capacities; shared and immutable) and Snapshot (everything, for
// the CLI and debugging). No lock is held once a snapshot is returned.
package ledger
