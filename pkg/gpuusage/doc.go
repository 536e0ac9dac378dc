// Package gpuusage keeps each namespace's GPUUsage object (API group
// gpuadmit.io): the reservations every webhook replica shares, written with
// the object's resourceVersion (compare and swap, as the in-tree
// ResourceQuota admission commits quota status), so that several replicas
// never admit the same free MiB twice.
//
// Admission of a GPU pod (Store.Admit) queues for the namespace's worker
// (commit.go), which decides the reviews that queued together in order,
// each counting the reservations of those before it, and writes them in one
// status update; "allowed" is answered only after the write succeeded. A
// conflict (another replica wrote first) re-reads the object and decides the
// whole group again, within the reviews' deadlines. A review never replaces
// a reservation, and an object holds at most MaxReservations; a review
// denied only because of unconfirmed reservations waits for them, first in
// the queue (settle.go).
//
// A reservation's life in the object:
//
//	admitted, written ──▶ RESERVED ──a replica's watch records the pod──▶ MARKED (recordedResourceVersion)
//	                         │                                               │ every live replica's pod
//	                         │ nobody recorded it, confirmAfter passed       │ watch passed that mark
//	                         ▼                                               ▼
//	                        DUE ──a read finds no pod of that UID──▶ REMOVED ◀┘ (removedResourceVersion advances)
//	                         ▲ │ the pod exists unseen, or the read failed
//	                         └─┘ read again later, backing off to recheckMax
//
// Each replica publishes how far its pod watch got in a Lease (progress.go);
// a replica counts a reservation until its own watch recorded the pod; one
// whose watch is behind removedResourceVersion waits before deciding.
// Marks and removals ride on the namespace's next write (tidy), made by the
// worker: an admission group's, or the cleaner's round (cleaner.go), which
// also confirms absence by reading pods, confirmAfter after a reservation
// was first seen (derived from the cluster's other validating webhooks:
// window.go). Nothing ends on a timer; schedules
// use each replica's own clock, never another's timestamps, so clock skew
// does not matter. A deleted object's reservations are kept and written
// back (repair.go). Each namespace has an owner among the replicas that
// advertise an address (owner.go); the server forwards reviews to it to
// spare conflicts.
//
// What users read (kubectl get gpuusage: used, reserved and hard per
// resource, printer columns, conditions) is written by the Summarizer
// (summary.go), on the elected replica only, with merge patches that leave
// the reservations alone.
package gpuusage
