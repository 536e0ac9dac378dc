// Package reservation is the reservation concept, in one place: a pod (or
// ResourceClaim) admitted that not every webhook replica's watch has
// recorded yet, held under its UID in the namespace's GPUReservationSet
// (pkg/apis/gpuadmit/v1alpha1) so that every replica counts every other
// replica's admissions.
//
//   - Reservation is the one internal form, what a ledger is handed to
//     count; Reader lists them by namespace (the summaries, the OpenReports
//     writer and the metrics read them through it).
//   - The counting rule has two halves: Countable, the reservations of an
//     object a replica hands its ledger (all but those recorded at a
//     resourceVersion its pod watch passed), and Counts, the ledger's
//     (not those whose pod or claim it recorded, or whose name a recorded
//     pod of another UID holds), applied under the ledger's lock so that a
//     pod counts once.
//   - Validate refuses a malformed object (an edit by hand the schema let
//     through): its namespace fails closed.
//   - Assumed keeps the objects a replica wrote until its informer
//     delivers them (kube-scheduler's assume cache).
//
// A reservation's life in its object (pkg/admitqueue writes it: admission
// rounds add, tidy marks and removes):
//
//	admitted, written ──▶ RESERVED ──a replica's watch records the pod──▶ MARKED (recordedResourceVersion)
//	                         │  │                                            │ every live replica's pod
//	                         │  └─every live replica's watch passed the      │ watch passed that mark
//	                         │    tidying one's record of the pod─────────┐  │
//	                         │ nobody recorded it, confirmAfter passed    ▼  ▼
//	                        DUE ──a read finds no pod of that UID──▶ REMOVED (removedResourceVersion advances)
//	                         ▲ │ the pod exists unseen, or the read failed
//	                         └─┘ read again later, backing off to recheckMax
//
// A claim's reservation is marked when recorded and removed only when a
// read (or the watch) confirms the claim gone. A replica counts a
// reservation until its own watch recorded the pod (Countable), and one
// whose watch is behind removedResourceVersion waits before deciding.
// Nothing ends on a timer.
//
// A gang's hold (gpuadmitv1.GangHold: room a gang's first pod holds for
// the rest of its gang) is counted by the same rule, as one reservation of
// its remaining slots x one slot's demand under a key no pod can have
// (gangs.go); pkg/admitqueue writes and ends the holds.
package reservation
