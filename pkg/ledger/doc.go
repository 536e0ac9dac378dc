// Package ledger is gpuadmit's accounting: what every namespace and every
// GPU device is using right now, the ResourceQuota limits that apply, the
// device capacity of every node, and the labels of every namespace. Pods,
// claims, nodes, quotas and namespaces go in (Upsert*, Delete*,
// ReplacePods); usage and snapshots come out. It watches nothing and
// decodes nothing: pkg/feed hands it what the watches deliver (slimmed by
// pkg/podwire and the feed's transforms) or, offline, the `gpuadmit usage`
// command hands it the objects of a manifest. It holds only what it was
// handed.
//
// It is modelled on Kueue's cache: for every GPU pod it stores the usage it
// charged (the namespace vector and the per-device vectors); every event
// re-derives the pod's target from the Pod object alone (pkg/effective:
// Compute, StageOf, TargetOf) and replaces the stored value with it
// (subtract stored, add target); a deletion subtracts exactly what is
// stored. Because the target is a pure function of the object, duplicate
// events, resyncs and relists are harmless and a rebuilt ledger lands every
// pod straight in the state its status shows. Sums never go negative.
//
// Reservations of pods admitted but not yet recorded are not the ledger's:
// they live in the namespaces' GPUReservationSets (pkg/admitqueue), and whoever
// asks about a namespace hands in the ones it would count; the snapshot
// counts those the watch has not recorded, under the same lock as the usage
// (reservation.go, with its diagram).
//
// Team quotas (GPUClusterQuotas) are the ledger's as ResourceQuotas are
// (teams.go): it parses their limits, tells which namespaces each selects
// now, and sums a team's usage over the namespaces the caller counts, with
// each user's part: every pod and claim is charged to the user it was first
// recorded with (Options.Users), so an edit never moves a charge.
//
// Reads are snapshots taken under a read lock: Namespace (used, reserved,
// limits with the quota that set them, problems), Capacity (per node: labels
// and device capacities; shared and immutable) and Snapshot (everything, for
// the CLI and debugging). No lock is held once a snapshot is returned.
package ledger
